// Muon: momentum orthogonalized by Newton-Schulz (Keller Jordan 2024, "Muon: An optimizer for
// hidden layers in neural networks"; Liu et al. 2025, "Muon is Scalable for LLM Training",
// arXiv:2502.16982), as torch.optim.Muon of torch 2.14.1 computes it (torch/optim/_muon.py,
// _single_tensor_muon), with the AdamW its users pair it with for every other parameter.
//
// Muon is defined for the 2-D weight matrices of hidden layers only (torch.optim.Muon refuses any
// other shape). Its users give the rest (biases, norm scales, usually embeddings and the output
// head) to AdamW: Keller Jordan's MuonWithAuxAdam does it with a per-group flag, which is what
// `orthogonalize` is here. So one optimizer, one state, one checkpoint, two rules:
//
// orthogonalize = true (torch.optim.Muon), per [rows, cols] parameter W with gradient G, momentum
// buffer B (zeros at first), group options lr, weight_decay wd, momentum mu, nesterov:
//   B = B + (1 - mu) * (G - B)                    lerp: B = mu * B + (1 - mu) * G
//   U = nesterov ? G + mu * (B - G) : B           lerp
//   O = newton_schulz(U)                          newton_schulz.h (bf16 by default, as torch)
//   W = W * (1 - lr * wd)                         decoupled weight decay
//   W = W - lr * s * O                            s, the shape's rate factor (adjust_lr):
//       "original" (torch's default, Keller's)    sqrt(max(1, rows / cols))
//       "match_rms_adamw" (Moonshot)              0.2 * sqrt(max(rows, cols)): the update's RMS is
//                                                 AdamW's, so AdamW's lr and wd carry over
//       "spectral_unclamped"                      sqrt(rows / cols)
// orthogonalize = false (torch.optim.AdamW, its per-tensor path), betas (b1, b2), eps, t = the
// parameter's step:
//   W = W * (1 - lr * wd)
//   m = m + (1 - b1) * (G - m);   v = b2 * v + (1 - b2) * G^2
//   W = W - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
//
// Differences from torch, none of which changes a trajectory: Newton-Schulz copies its input even
// when the parameter is already bf16 (torch's in-place normalization then rescales the momentum
// buffer of a bf16 parameter without Nesterov: a torch quirk not reproduced); ns_dtype "fp32" runs
// the iteration in float32 instead (torch has no such option).
//
// Two implementations, chosen by `foreach`: the elementwise work (momentum, Nesterov, decay, the
// update; all of AdamW) as ATen multi-tensor `_foreach_*` ops over each bucket (a group's tensors
// of one device and dtype) and Newton-Schulz per matrix, since its products have per-matrix shapes
// (torch.optim.Muon has no multi-tensor path at all); or one op sequence per tensor (the reference
// path). Both run the same ATen operations on the same values, so on the CPU they give the same
// bits, and the same bits as torch. No host read either way.
#pragma once

#include <torch/optim/optimizer.h>
#include <torch/optim/serialize.h>
#include <torch/serialize/archive.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "core/optim/newton_schulz.h"

namespace batchlab::optim {

struct MuonOptions : public torch::optim::OptimizerCloneableOptions<MuonOptions> {
  MuonOptions(double lr = 1e-3);  // NOLINT(google-explicit-constructor): LibTorch's pattern
  typedef std::tuple<double, double> betas_t;
  typedef std::tuple<double, double, double> coefficients_t;
  TORCH_ARG(double, lr);
  TORCH_ARG(double, weight_decay) = 0.1;  // torch.optim.Muon's default
  // true: the Muon rule (2-D parameters only); false: AdamW (any shape).
  TORCH_ARG(bool, orthogonalize) = true;
  // The Muon rule.
  TORCH_ARG(double, momentum) = 0.95;
  TORCH_ARG(bool, nesterov) = true;
  TORCH_ARG(coefficients_t, ns_coefficients) = std::make_tuple(3.4445, -4.7750, 2.0315);
  TORCH_ARG(int64_t, ns_steps) = 5;
  TORCH_ARG(double, ns_eps) = 1e-7;
  TORCH_ARG(std::string, ns_dtype) = "bf16";       // "bf16" (torch) or "fp32"
  TORCH_ARG(std::string, adjust_lr) = "original";  // or "match_rms_adamw", "spectral_unclamped"
  // The AdamW rule.
  TORCH_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  TORCH_ARG(double, eps) = 1e-8;
  // false: one ATen op sequence per tensor instead of the multi-tensor ops (the reference path).
  TORCH_ARG(bool, foreach) = true;

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
  friend bool operator==(const MuonOptions& a, const MuonOptions& b);
};

struct MuonParamState : public torch::optim::OptimizerCloneableParamState<MuonParamState> {
  TORCH_ARG(int64_t, step) = 0;
  TORCH_ARG(torch::Tensor, momentum_buffer);  // Muon rule: B, shape of the parameter
  TORCH_ARG(torch::Tensor, exp_avg);          // AdamW rule: m, shape of the parameter
  TORCH_ARG(torch::Tensor, exp_avg_sq);       // AdamW rule: v, shape of the parameter

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
  friend bool operator==(const MuonParamState& a, const MuonParamState& b);
};

class Muon : public torch::optim::Optimizer {
 public:
  // Each group's own options are used as given (none are filled in from `defaults`). A group with
  // orthogonalize = true must hold 2-D parameters only (batchlab::Error otherwise, naming the
  // shape, as torch refuses them).
  explicit Muon(std::vector<torch::optim::OptimizerParamGroup> param_groups,
                MuonOptions defaults = {});
  explicit Muon(std::vector<torch::Tensor> params, MuonOptions defaults = {});

  torch::Tensor step(LossClosure closure = nullptr) override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

  // State of one parameter, or nullptr before its first step.
  const MuonParamState* param_state(const torch::Tensor& param) const;

 private:
  template <typename Self, typename Archive>
  static void serialize(Self& self, Archive& archive) {
    _TORCH_OPTIM_SERIALIZE_WITH_TEMPLATE_ARG(Muon);
  }
};

namespace detail {
// The rate factor s of a [rows, cols] matrix under `adjust_lr` (torch's _adjust_lr).
double muon_lr_factor(const std::string& adjust_lr, int64_t rows, int64_t cols);
// The Newton-Schulz settings of a group.
NewtonSchulz newton_schulz_of(const MuonOptions& o);
}  // namespace detail

}  // namespace batchlab::optim
