// LARS: layer-wise adaptive rate scaling (You, Gitman, Ginsburg 2017, "Large Batch Training of
// Convolutional Networks", arXiv:1708.03888), with LARC trust clipping (NVIDIA apex LARC).
//
// Per parameter tensor w with gradient g, in group options (lr, momentum mu, weight_decay wd,
// trust_coefficient eta, eps):
//   adapted = adapt || always_adapt
//   if adapted:
//     ratio = eta * ||w|| / (||g|| + wd * ||w|| + eps),  ratio = 1 when ||w|| = 0 or ||g|| = 0
//     trust_clip (LARC): ratio = min(ratio / lr, 1)   (the effective LR eta*||w||/... never exceeds
//     lr)
//   else ratio = 1
//   d = (g + wd * w) * ratio
//   lr_in_momentum = false  (PyTorch SGD, timm Lars, apex LARC):   buf = mu * buf + d,       u =
//   buf
//                                                                  nesterov: u = d + mu * buf
//                                                                  w -= lr * u
//   lr_in_momentum = true   (LARS paper Alg. 1, MLPerf, apex FusedLARS): buf = mu * buf + lr * d,
//                                                                  u = buf, nesterov: u = lr*d +
//                                                                  mu*buf w -= u
// The momentum buffer starts at zero, which makes the first step buf = d (resp. lr * d), exactly as
// PyTorch's "buffer = clone(d)". The two forms agree while lr is constant; when lr changes, the
// paper form keeps the momentum accumulated at the old rates (mu * lr_old * d_old) while the
// PyTorch form rescales past momentum to the new rate (lr_new * mu * d_old).
//
// Reference semantics: timm/optim/lars.py (commit 9d8ccd2b) for lr_in_momentum = false; its rule
// that only groups with weight_decay != 0 (or always_adapt) are adapted is expressed here by the
// per-group `adapt` flag, which the factory sets from the parameter-group rules (excluded
// parameters: false).
//
// Three implementations of the same arithmetic, chosen per parameter by its device and the options:
// - fused (CPU, contiguous float/double, `fused`): two fused passes (multi_tensor.h): one reads w
//   and g for both norms (adapted tensors only), one reads w, g, buf and writes buf, w: 7 array
//   passes where PyTorch's SGD with weight decay makes 11.
// - foreach (every other parameter with `foreach`, so every GPU parameter): ATen's multi-tensor
//   `_foreach_*` ops over all tensors of a group at once, a number of kernel launches that does not
//   grow with the number of tensors and one host read per step (foreach_lars.h has the count).
// - per tensor (`foreach` false, or sparse gradients): one ATen op sequence per tensor, no host
//   read; the reference the others are tested against.
// Gradients are not modified.
#pragma once

#include <torch/optim/optimizer.h>
#include <torch/optim/serialize.h>
#include <torch/serialize/archive.h>

#include <string>
#include <vector>

#include "core/optim/fused_kernels.h"
#include "core/optim/layerwise.h"

namespace batchlab::optim {

struct LarsOptions : public torch::optim::OptimizerCloneableOptions<LarsOptions> {
  LarsOptions(double lr = 1.0);  // NOLINT(google-explicit-constructor): LibTorch's pattern
  TORCH_ARG(double, lr);
  TORCH_ARG(double, momentum) = 0.9;
  TORCH_ARG(double, weight_decay) = 0.0;
  TORCH_ARG(bool, nesterov) = false;
  TORCH_ARG(double, trust_coefficient) = 0.001;
  TORCH_ARG(double, eps) = 1e-8;
  TORCH_ARG(bool, trust_clip) = false;
  // Trust ratio for this group even when `adapt` is false (timm: also for weight_decay == 0).
  TORCH_ARG(bool, always_adapt) = false;
  // Whether this group gets the trust ratio (false for excluded parameters: biases, norms).
  TORCH_ARG(bool, adapt) = true;
  TORCH_ARG(bool, lr_in_momentum) = false;
  // false: CPU tensors too take the foreach / per-tensor path (to check the fused loops).
  TORCH_ARG(bool, fused) = true;
  // false: one ATen op sequence per tensor instead of the multi-tensor ops (the reference path).
  TORCH_ARG(bool, foreach) = true;

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
  friend bool operator==(const LarsOptions& a, const LarsOptions& b);
};

struct LarsParamState : public torch::optim::OptimizerCloneableParamState<LarsParamState> {
  TORCH_ARG(torch::Tensor, momentum_buffer);  // shape of the parameter; undefined without momentum
  // 0-dim float64: the ratio applied in the last step (after trust clipping); undefined for
  // parameters that are not adapted. On the CPU after a fused or foreach step (both compute it on
  // the host; free to read), on the parameter's device after a per-tensor step (reading is a sync).
  TORCH_ARG(torch::Tensor, trust_ratio);

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
  friend bool operator==(const LarsParamState& a, const LarsParamState& b);
};

class Lars : public torch::optim::Optimizer, public TrustRatioSource {
 public:
  // Each group's own options are used as given (none are filled in from `defaults`).
  explicit Lars(std::vector<torch::optim::OptimizerParamGroup> param_groups,
                LarsOptions defaults = {});
  explicit Lars(std::vector<torch::Tensor> params, LarsOptions defaults = {});

  torch::Tensor step(LossClosure closure = nullptr) override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

  // State of one parameter, or nullptr before its first step.
  const LarsParamState* param_state(const torch::Tensor& param) const;
  at::Tensor trust_ratio(const at::Tensor& param) const override;

 private:
  template <typename Self, typename Archive>
  static void serialize(Self& self, Archive& archive) {
    _TORCH_OPTIM_SERIALIZE_WITH_TEMPLATE_ARG(Lars);
  }
};

namespace detail {
// What every implementation shares: the trust ratio from the norms (fused and foreach compute it
// on the host) and the scalars of the update given that ratio.
double lars_trust_ratio(const LarsOptions& o, double w_norm, double g_norm);
kernels::LarsScalars lars_scalars(const LarsOptions& o, double ratio);
}  // namespace detail

}  // namespace batchlab::optim
