#include "core/train/accumulation.h"

#include <torch/torch.h>

#include "core/optim/host_reads.h"
#include "core/train/data_order.h"

namespace batchlab::train {
namespace {

// Brackets a stretch of measurement with the hooks' measure_begin / measure_end.
class MeasurementScope {
 public:
  explicit MeasurementScope(const AccumulationHooks* hooks) : hooks_(hooks) {
    if (hooks_ && hooks_->measure_begin) hooks_->measure_begin();
  }
  ~MeasurementScope() {
    if (hooks_ && hooks_->measure_end) hooks_->measure_end();
  }
  MeasurementScope(const MeasurementScope&) = delete;
  MeasurementScope& operator=(const MeasurementScope&) = delete;

 private:
  const AccumulationHooks* hooks_;
};

}  // namespace

AccumulatedStep accumulate_gradients(Task& task, const std::vector<torch::Tensor>& micro_indices,
                                     std::optional<uint64_t> augment_seed,
                                     const std::vector<optim::NamedParameter>* params,
                                     std::vector<double>* micro_sq_norms,
                                     const AccumulationHooks* hooks) {
  const auto k = static_cast<double>(micro_indices.size());
  const bool measure = params != nullptr && micro_sq_norms != nullptr;
  const MixedPrecision precision = hooks ? hooks->precision : MixedPrecision{};
  torch::Tensor loss_sum;
  std::vector<torch::Tensor> sq_norms;  // 0-dim float64 each: synchronized once at the end
  int64_t items = 0;
  for (size_t j = 0; j < micro_indices.size(); ++j) {
    std::optional<uint64_t> seed;
    if (augment_seed) seed = mix_seed(*augment_seed, j);
    std::vector<torch::Tensor> before;
    if (measure) {
      MeasurementScope off_clock(hooks);
      for (const auto& p : *params) {
        const auto& g = p.tensor.grad();
        before.push_back(g.defined() ? g.detach().clone() : torch::Tensor());
      }
    }
    auto batch = task.make_batch(Split::train, micro_indices[j], seed);
    BatchOutput out;
    {
      AutocastGuard autocast(precision);
      out = task.forward(batch);
    }
    if (hooks && hooks->before_last_backward && j + 1 == micro_indices.size()) {
      hooks->before_last_backward();
    }
    // Each micro-batch's mean loss / k: the summed gradient is the gradient of the global mean.
    (out.loss / k).backward();
    if (measure) {
      MeasurementScope off_clock(hooks);
      torch::NoGradGuard no_grad;
      auto total =
          torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(out.loss.device()));
      for (size_t i = 0; i < params->size(); ++i) {
        const auto& g = (*params)[i].tensor.grad();
        if (!g.defined()) continue;
        auto own = before[i].defined() ? (g - before[i]) : g;  // this micro-batch's gradient / k
        total = total + own.to(torch::kFloat64).pow(2).sum();
      }
      sq_norms.push_back(total * (k * k));
    }
    auto detached = out.loss.detach().to(torch::kFloat64);
    loss_sum = loss_sum.defined() ? loss_sum + detached : detached;
    items += out.count;
  }
  if (measure) {
    MeasurementScope off_clock(hooks);
    micro_sq_norms->clear();
    if (!sq_norms.empty()) {
      auto host = optim::read_to_host(torch::stack(sq_norms)).contiguous();
      const double* v = host.data_ptr<double>();
      micro_sq_norms->assign(v, v + host.size(0));
    }
  }
  AccumulatedStep result;
  result.mean_loss = loss_sum / k;
  if (hooks == nullptr) result.loss = result.mean_loss.item<double>();
  result.items = items;
  return result;
}

}  // namespace batchlab::train
