#include "core/train/layer_stats.h"

#include <ATen/ATen.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <optional>

#include "core/optim/foreach_common.h"
#include "core/optim/host_reads.h"

namespace batchlab::train {

namespace {
// Norms of all tensors as one float64 [P] tensor on their device: one multi-tensor op (a few
// kernel launches on a GPU, whatever P is), no host read.
torch::Tensor stacked_norms(const std::vector<torch::Tensor>& tensors) {
  std::vector<torch::Tensor> detached;
  detached.reserve(tensors.size());
  for (const auto& t : tensors) detached.push_back(t.detach());
  return torch::stack(optim::detail::foreach_norm(detached)).to(torch::kFloat64);
}

// The trust ratios as host values (none where none was applied). Ratios already on the CPU (the
// fused and foreach optimizer paths) are free to read; the ones on a device (the per-tensor path)
// are stacked and read once.
std::vector<std::optional<double>> host_trust_ratios(const std::vector<torch::Tensor>& trust,
                                                     size_t count) {
  std::vector<std::optional<double>> out(count);
  std::vector<torch::Tensor> on_device;
  std::vector<size_t> where;
  for (size_t i = 0; i < count && i < trust.size(); ++i) {
    if (!trust[i].defined()) continue;
    if (trust[i].device().is_cpu()) {
      out[i] = *trust[i].to(torch::kFloat64).contiguous().data_ptr<double>();
    } else {
      on_device.push_back(trust[i].detach().to(torch::kFloat64).reshape({}));
      where.push_back(i);
    }
  }
  if (!on_device.empty()) {
    const torch::Tensor host = optim::read_to_host(torch::stack(on_device)).contiguous();
    for (size_t j = 0; j < where.size(); ++j) out[where[j]] = host.data_ptr<double>()[j];
  }
  return out;
}
}  // namespace

LayerStatsCollector::LayerStatsCollector(std::vector<optim::NamedParameter> params)
    : params_(std::move(params)) {}

void LayerStatsCollector::before_update() {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> weights, grads;
  weights_before_.clear();
  for (const auto& p : params_) {
    weights.push_back(p.tensor.detach());
    grads.push_back(p.tensor.grad().defined() ? p.tensor.grad() : torch::zeros_like(p.tensor));
  }
#if __has_include(<ATen/ops/_foreach_clone.h>)
  weights_before_ = at::_foreach_clone(weights);
#else
  // LibTorch before 2.12 has no _foreach_clone (the lent GPU machines carry 2.11).
  for (const auto& w : weights) weights_before_.push_back(w.clone());
#endif
  weight_norms_ = stacked_norms(weights);
  grad_norms_ = stacked_norms(grads);
}

std::vector<LayerStatRecord> LayerStatsCollector::after_update(
    int64_t step, const std::vector<torch::Tensor>& trust_ratios) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> now;
  for (const auto& p : params_) now.push_back(p.tensor.detach());
  const std::vector<torch::Tensor> deltas = at::_foreach_sub(now, weights_before_);
  // One host copy of the norms: [3, P] = weight norms, grad norms, update norms.
  auto all = optim::read_to_host(torch::stack({weight_norms_, grad_norms_, stacked_norms(deltas)}))
                 .contiguous();
  weights_before_.clear();
  auto a = all.accessor<double, 2>();
  const std::vector<std::optional<double>> trust = host_trust_ratios(trust_ratios, params_.size());

  std::vector<LayerStatRecord> rows;
  rows.reserve(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto j = static_cast<int64_t>(i);
    LayerStatRecord r;
    r.step = step;
    r.layer = params_[i].name;
    r.numel = params_[i].tensor.numel();
    r.weight_norm = a[0][j];
    r.grad_norm = a[1][j];
    r.ratio =
        r.grad_norm > 0 ? r.weight_norm / r.grad_norm : std::numeric_limits<double>::infinity();
    r.update_norm = a[2][j];
    r.trust_ratio = trust[i];
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace batchlab::train
