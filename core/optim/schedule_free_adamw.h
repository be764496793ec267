// Schedule-Free AdamW (Defazio et al. 2024, "The Road Less Scheduled", arXiv:2405.15682; the
// AlgoPerf 2024 self-tuning winner), as the schedulefree package 1.4.1 computes it
// (schedulefree/adamw_schedulefree.py, AdamWScheduleFree, its per-tensor path).
//
// Three sequences per parameter: z (the base, SGD-like), x (the weighted average of z: the weights
// to evaluate) and y = (1 - b1) * z + b1 * x, where gradients are taken. The parameter tensor holds
// y while training and x while evaluating (eval_weights.h); the state holds z and v. Per group
// (options lr, betas (b1, b2), eps, weight_decay wd, r, weight_lr_power q; running k (steps
// taken), lr_max, weight_sum), one step:
//   lr_max = max(lr_max, lr)
//   c_w    = (k + 1)^r * lr_max^q;  weight_sum += c_w;  ckp1 = c_w / weight_sum (0 if that is 0)
//   per parameter, gradient g:
//     v = b2 * v + (1 - b2) * g^2
//     u = g / (sqrt(v / (1 - b2^(k+1))) + eps)  + wd * y        (decay taken at y)
//     y = y + ckp1 * (z - y) + lr * (b1 * (1 - ckp1) - 1) * u   (x and y move together)
//     z = z - lr * u
//   k += 1
// and the swaps:  to x: y + (1 - 1/b1) * (z - y);   to y: x + (1 - b1) * (z - x).
// The rate has no decay: there is no horizon to know. Warmup comes from batchlab's schedule (the
// rate is a pure function of the step, set before every step); with a warmup, lr_max and the
// lr^q weights make the average skip the warmup's iterates as the package does. The package's own
// warmup_steps option is therefore not offered: schedule.warmup_* with decay = "constant" gives the
// same rates (the golden trajectories in tests/data/golden/optim_packages check it).
//
// Differences from the package, none of which changes a trajectory beyond rounding:
// - gradients are left unmodified (the package divides p.grad in place);
// - the swap back to y restores the y saved by the swap to x, bit for bit, instead of recomputing
//   it from x and z (the package's round trip rounds): a run's trajectory does not depend on how
//   often it is evaluated, and resuming from a checkpoint saved during evaluation is exact. The
//   saved y is one extra parameter-sized tensor per parameter while the evaluation weights are in
//   place (and in a checkpoint written then); it is freed on the swap back.
// The running values (k, lr_max, weight_sum) and whether the parameters hold x or y live in each
// group's options, as the package keeps them in its param_groups, so they travel with the
// optimizer's state in checkpoints.
//
// Two implementations of the same ATen operations, chosen by `foreach`: the multi-tensor
// `_foreach_*` ops over each bucket (a group's tensors of one device and dtype: 9 ops per bucket,
// 10 with weight decay, no host read), or one op sequence per tensor (the reference path).
#pragma once

#include <torch/optim/optimizer.h>
#include <torch/optim/serialize.h>
#include <torch/serialize/archive.h>

#include <cstdint>
#include <tuple>
#include <vector>

#include "core/optim/eval_weights.h"

namespace batchlab::optim {

struct ScheduleFreeAdamWOptions
    : public torch::optim::OptimizerCloneableOptions<ScheduleFreeAdamWOptions> {
  ScheduleFreeAdamWOptions(double lr = 0.0025);  // NOLINT(google-explicit-constructor)
  typedef std::tuple<double, double> betas_t;
  TORCH_ARG(double, lr);
  TORCH_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  TORCH_ARG(double, eps) = 1e-8;
  TORCH_ARG(double, weight_decay) = 0.0;
  TORCH_ARG(double, r) = 0.0;                // polynomial weighting (k+1)^r of the average
  TORCH_ARG(double, weight_lr_power) = 2.0;  // the average weighs iterates by lr_max^this
  TORCH_ARG(bool, foreach) = true;  // false: one ATen op sequence per tensor (the reference)
  // Running values of the group (the package's k, lr_max, weight_sum, train_mode).
  TORCH_ARG(int64_t, k) = 0;
  TORCH_ARG(double, lr_max) = -1.0;
  TORCH_ARG(double, weight_sum) = 0.0;
  TORCH_ARG(bool, train_mode) = true;  // the parameters hold y (false: x)

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
  friend bool operator==(const ScheduleFreeAdamWOptions& a, const ScheduleFreeAdamWOptions& b);
};

struct ScheduleFreeAdamWParamState
    : public torch::optim::OptimizerCloneableParamState<ScheduleFreeAdamWParamState> {
  TORCH_ARG(torch::Tensor, z);           // the base sequence, shape of the parameter
  TORCH_ARG(torch::Tensor, exp_avg_sq);  // v, shape of the parameter
  // y, kept while the parameter holds x (undefined otherwise): the swap back restores it exactly.
  TORCH_ARG(torch::Tensor, y);

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
  friend bool operator==(const ScheduleFreeAdamWParamState& a,
                         const ScheduleFreeAdamWParamState& b);
};

class ScheduleFreeAdamW : public torch::optim::Optimizer, public SwapsEvalWeights {
 public:
  // Each group's own options are used as given (none are filled in from `defaults`).
  explicit ScheduleFreeAdamW(std::vector<torch::optim::OptimizerParamGroup> param_groups,
                             ScheduleFreeAdamWOptions defaults = {});
  explicit ScheduleFreeAdamW(std::vector<torch::Tensor> params,
                             ScheduleFreeAdamWOptions defaults = {});

  // Throws batchlab::Error while the parameters hold the evaluation weights (as the package does:
  // a step from x would silently train a different sequence).
  torch::Tensor step(LossClosure closure = nullptr) override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

  void eval_weights() override;
  void train_weights() override;
  bool holds_eval_weights() const override;

  // State of one parameter, or nullptr before its first step.
  const ScheduleFreeAdamWParamState* param_state(const torch::Tensor& param) const;

 private:
  template <typename Self, typename Archive>
  static void serialize(Self& self, Archive& archive) {
    _TORCH_OPTIM_SERIALIZE_WITH_TEMPLATE_ARG(ScheduleFreeAdamW);
  }
};

}  // namespace batchlab::optim
