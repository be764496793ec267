// Lion: evolved sign momentum (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms",
// arXiv:2302.06675), as lion-pytorch 0.2.5 computes it (lion_pytorch/lion_pytorch.py, update_fn,
// the per-tensor path its Lion takes with use_triton off).
//
// Per parameter tensor w with gradient g and momentum m (zeros before the first step), in group
// options (lr, betas (b1, b2), weight_decay wd):
//   w <- w * (1 - lr * wd)                 decoupled weight decay, before the update
//   c  = sign(b1 * m + (1 - b1) * g)       sign(0) = 0: an entry with no signal does not move
//   w <- w - lr * c
//   m <- b2 * m + (1 - b2) * g             the momentum is updated AFTER c is taken from it
// Every entry moves by exactly lr (or 0), whatever the gradient's scale: Lion wants a learning rate
// 3-10x below AdamW's and a weight decay 3-10x above, so that lr * wd stays about the same
// (the paper, section 5).
//
// Differences from the reference, none of which changes a trajectory: the weight-decay multiply is
// skipped when wd = 0 (a multiply by 1); lion-pytorch's decoupled_weight_decay option (wd divided
// by the initial lr) is not offered: batchlab's schedule sets lr every step, so "initial" has no
// meaning here, and optim.weight_decay already is the decoupled coefficient.
//
// Two implementations of the same arithmetic (the same ATen operations, so the same bits on the
// CPU), chosen by `foreach`:
// - foreach (default): ATen's multi-tensor `_foreach_*` ops over all tensors of one bucket (a
//   group's tensors of one device and dtype, foreach_common.h): 6 ops per bucket, 7 with weight
//   decay, whatever the number of tensors (lion_test.cpp counts them); no host read.
// - per tensor: the same 6-7 ops once per tensor; the reference the other is tested against.
// (The momentum update as one lerp would save an op per bucket but round differently from the
// reference's multiply-then-add; the two paths are kept bit-identical instead.)
// Gradients are not modified.
#pragma once

#include <torch/optim/optimizer.h>
#include <torch/optim/serialize.h>
#include <torch/serialize/archive.h>

#include <tuple>
#include <vector>

namespace batchlab::optim {

struct LionOptions : public torch::optim::OptimizerCloneableOptions<LionOptions> {
  LionOptions(double lr = 1e-4);  // NOLINT(google-explicit-constructor): LibTorch's pattern
  typedef std::tuple<double, double> betas_t;
  TORCH_ARG(double, lr);
  TORCH_ARG(betas_t, betas) = std::make_tuple(0.9, 0.99);
  TORCH_ARG(double, weight_decay) = 0.0;
  // false: one ATen op sequence per tensor instead of the multi-tensor ops (the reference path).
  TORCH_ARG(bool, foreach) = true;

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
  friend bool operator==(const LionOptions& a, const LionOptions& b);
};

struct LionParamState : public torch::optim::OptimizerCloneableParamState<LionParamState> {
  TORCH_ARG(int64_t, step) = 0;       // updates this parameter took (for the record only)
  TORCH_ARG(torch::Tensor, exp_avg);  // m, shape of the parameter

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
  friend bool operator==(const LionParamState& a, const LionParamState& b);
};

class Lion : public torch::optim::Optimizer {
 public:
  // Each group's own options are used as given (none are filled in from `defaults`).
  explicit Lion(std::vector<torch::optim::OptimizerParamGroup> param_groups,
                LionOptions defaults = {});
  explicit Lion(std::vector<torch::Tensor> params, LionOptions defaults = {});

  torch::Tensor step(LossClosure closure = nullptr) override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

  // State of one parameter, or nullptr before its first step.
  const LionParamState* param_state(const torch::Tensor& param) const;

 private:
  template <typename Self, typename Archive>
  static void serialize(Self& self, Archive& archive) {
    _TORCH_OPTIM_SERIALIZE_WITH_TEMPLATE_ARG(Lion);
  }
};

}  // namespace batchlab::optim
