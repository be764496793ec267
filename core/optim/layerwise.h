// What the layer-wise adaptive optimizers (LARS, LAMB) offer beyond torch::optim::Optimizer, as two
// small interfaces. TrainingOptimizer (factory.h) reaches them through pointers make_optimizer
// sets, so the wrapper never asks which optimizer it holds.
#pragma once

#include <ATen/core/Tensor.h>

#include "core/optim/grad_clip.h"

namespace batchlab::optim {

// Per-layer trust ratios, for the per-layer statistics (DESIGN.md: "the trust ratio each layer got
// is readable for logging").
class TrustRatioSource {
 public:
  virtual ~TrustRatioSource() = default;
  // The ratio applied to `param` in its last step: 0-dim float64, not a copy; undefined when
  // `param` is not adapted or has not been stepped yet. On the CPU after a fused or multi-tensor
  // step (free to read), on the parameter's device after a per-tensor one (reading is a sync).
  virtual at::Tensor trust_ratio(const at::Tensor& param) const = 0;
};

// An optimizer that clips by the global gradient norm inside its own update (LAMB, as apex's and
// timm's) takes that norm from a caller who measured it already, instead of measuring it again.
class ClipsByGlobalNorm {
 public:
  virtual ~ClipsByGlobalNorm() = default;
  // One update; `grad_norm` must be global_grad_norm() of the current gradients of every group.
  virtual void step_with_grad_norm(const GradNorm& grad_norm) = 0;
};

}  // namespace batchlab::optim
