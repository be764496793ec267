#include "core/train/layer_stats.h"

#include <torch/torch.h>

#include <cmath>
#include <limits>

namespace batchlab::train {

namespace {
torch::Tensor stacked_norms(const std::vector<torch::Tensor>& tensors) {
  std::vector<torch::Tensor> norms;
  norms.reserve(tensors.size());
  for (const auto& t : tensors) norms.push_back(t.detach().norm().to(torch::kFloat64));
  return torch::stack(norms);
}
}  // namespace

LayerStatsCollector::LayerStatsCollector(std::vector<optim::NamedParameter> params)
    : params_(std::move(params)) {}

void LayerStatsCollector::before_update() {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> weights, grads;
  weights_before_.clear();
  for (const auto& p : params_) {
    weights.push_back(p.tensor);
    grads.push_back(p.tensor.grad().defined() ? p.tensor.grad() : torch::zeros_like(p.tensor));
    weights_before_.push_back(p.tensor.detach().clone());
  }
  weight_norms_ = stacked_norms(weights);
  grad_norms_ = stacked_norms(grads);
}

std::vector<LayerStatRecord> LayerStatsCollector::after_update(
    int64_t step, const std::vector<torch::Tensor>& trust_ratios) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> deltas;
  std::vector<torch::Tensor> trust;
  std::vector<bool> has_trust(params_.size(), false);
  for (size_t i = 0; i < params_.size(); ++i) {
    deltas.push_back(params_[i].tensor.detach() - weights_before_[i]);
    if (i < trust_ratios.size() && trust_ratios[i].defined()) {
      trust.push_back(trust_ratios[i].detach().to(torch::kFloat64).reshape({}));
      has_trust[i] = true;
    } else {
      trust.push_back(torch::full({}, std::nan(""), torch::kFloat64));
    }
  }
  // One host copy for everything: [4, P] = weight norms, grad norms, update norms, trust ratios.
  auto all = torch::stack({weight_norms_, grad_norms_, stacked_norms(deltas),
                           torch::stack(trust).to(weight_norms_.device())})
                 .to(torch::kCPU)
                 .contiguous();
  weights_before_.clear();
  auto a = all.accessor<double, 2>();

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
    if (has_trust[i]) r.trust_ratio = a[3][j];
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace batchlab::train
