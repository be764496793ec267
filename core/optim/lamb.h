// LAMB: layer-wise adaptive moments (You et al. 2020, "Large Batch Optimization for Deep Learning:
// Training BERT in 76 minutes", arXiv:1904.00962), in the NVLAMB form of NVIDIA apex FusedLAMB.
//
// Before the update, all gradients are clipped by their GLOBAL norm over every group (apex, timm):
//   N = ||(g_1, ..., g_k)||,  c = max(N / max_grad_norm, 1),  g <- g / c     (max_grad_norm 0: off)
// Then per parameter tensor w (group options lr, betas (b1, b2), eps, weight_decay wd), t = its
// step:
//   m = b1 * m + b3 * g            b3 = 1 - b1 with grad_averaging, else 1
//   v = b2 * v + (1 - b2) * g^2
//   bias_correction: m_hat = m / (1 - b1^t), v_hat = v / (1 - b2^t), else m_hat = m, v_hat = v
//   r = m_hat / (sqrt(v_hat) + eps) + wd * w
//   adapted = adapt || always_adapt
//   ratio = ||w|| / ||r|| if adapted (1 when ||w|| = 0 or ||r|| = 0; trust_clip: min(ratio, 1)),
//   else 1 w -= lr * ratio * r
// (timm computes sqrt(v_hat) as sqrt(v) / sqrt(1 - b2^t); the same is done here.)
//
// Reference semantics: timm/optim/lamb.py (commit 9d8ccd2b). Differences, none of which changes a
// trajectory: the step count is kept per parameter (timm keeps one per group; they agree whenever
// every parameter of a group has a gradient each step), gradients are left unmodified (timm divides
// p.grad by c in place), and whether a group is adapted is the per-group `adapt` flag set by the
// factory from the parameter-group rules rather than timm's "weight_decay != 0".
//
// Three implementations of the same arithmetic, chosen per parameter by its device and the options:
// - fused (CPU, contiguous float/double, `fused`): three fused passes (multi_tensor.h): the global
//   gradient norm (reads g; skipped when clipping is off), one that reads g, m, v, w, writes m, v
//   and sums ||w||^2 and ||r||^2, and one that reads m, v, w and writes w: 11 array passes, against
//   22 for LibTorch's AdamW. Non-adapted tensors need no norms and take a single pass.
// - foreach (every other parameter with `foreach`, so every GPU parameter): ATen's multi-tensor
//   `_foreach_*` ops over all tensors of a group at once, a number of kernel launches that does not
//   grow with the number of tensors and one host read per step (foreach_lamb.h has the count).
// - per tensor (`foreach` false, or sparse gradients): one ATen op sequence per tensor, no host
//   read; the reference the others are tested against, and ~10 launches per tensor on a GPU.
#pragma once

#include <torch/optim/optimizer.h>
#include <torch/optim/serialize.h>
#include <torch/serialize/archive.h>

#include <cstdint>
#include <tuple>
#include <vector>

#include "core/optim/fused_kernels.h"
#include "core/optim/layerwise.h"

namespace batchlab::optim {

struct LambOptions : public torch::optim::OptimizerCloneableOptions<LambOptions> {
  LambOptions(double lr = 1e-3);  // NOLINT(google-explicit-constructor): LibTorch's pattern
  typedef std::tuple<double, double> betas_t;
  TORCH_ARG(double, lr);
  TORCH_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  TORCH_ARG(double, eps) = 1e-6;
  TORCH_ARG(double, weight_decay) = 0.0;
  TORCH_ARG(bool, bias_correction) = true;
  TORCH_ARG(bool, grad_averaging) = true;
  // Global gradient-norm clipping threshold; 0 turns it off. Like timm, the value of the
  // optimizer's defaults() applies to all groups at once (a global norm has no per-group meaning).
  TORCH_ARG(double, max_grad_norm) = 1.0;
  TORCH_ARG(bool, trust_clip) = false;
  TORCH_ARG(bool, always_adapt) = false;
  TORCH_ARG(bool, adapt) = true;  // whether this group gets the trust ratio (false: biases, norms)
  TORCH_ARG(bool, fused) = true;  // false: CPU tensors too take the foreach / per-tensor path
  // false: one ATen op sequence per tensor instead of the multi-tensor ops (the reference path).
  TORCH_ARG(bool, foreach) = true;

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
  friend bool operator==(const LambOptions& a, const LambOptions& b);
};

struct LambParamState : public torch::optim::OptimizerCloneableParamState<LambParamState> {
  TORCH_ARG(int64_t, step) = 0;
  TORCH_ARG(torch::Tensor, exp_avg);     // m, shape of the parameter
  TORCH_ARG(torch::Tensor, exp_avg_sq);  // v, shape of the parameter
  // 0-dim float64: the ratio applied in the last step (after trust clipping); undefined for
  // parameters that are not adapted. On the CPU after a fused or foreach step (both compute it on
  // the host; free to read), on the parameter's device after a per-tensor step (reading is a sync).
  TORCH_ARG(torch::Tensor, trust_ratio);

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
  friend bool operator==(const LambParamState& a, const LambParamState& b);
};

class Lamb : public torch::optim::Optimizer, public TrustRatioSource, public ClipsByGlobalNorm {
 public:
  // Each group's own options are used as given (none are filled in from `defaults`).
  explicit Lamb(std::vector<torch::optim::OptimizerParamGroup> param_groups,
                LambOptions defaults = {});
  explicit Lamb(std::vector<torch::Tensor> params, LambOptions defaults = {});

  // Measures the global gradient norm itself when clipping is on (max_grad_norm > 0).
  torch::Tensor step(LossClosure closure = nullptr) override;
  // The same update with the norm measured by the caller (ignored when clipping is off).
  void step_with_grad_norm(const GradNorm& grad_norm) override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

  // State of one parameter, or nullptr before its first step.
  const LambParamState* param_state(const torch::Tensor& param) const;
  at::Tensor trust_ratio(const at::Tensor& param) const override;

 private:
  template <typename Self, typename Archive>
  static void serialize(Self& self, Archive& archive) {
    _TORCH_OPTIM_SERIALIZE_WITH_TEMPLATE_ARG(Lamb);
  }
  double max_grad_norm() const;
};

namespace detail {
// What every implementation shares: the per-step scalars of one parameter at its step t, and the
// trust ratio from the norms (fused and foreach compute it on the host).
kernels::LambScalars lamb_scalars(const LambOptions& o, int64_t t, double grad_scale);
double lamb_trust_ratio(const LambOptions& o, double w_norm, double r_norm);
}  // namespace detail

}  // namespace batchlab::optim
