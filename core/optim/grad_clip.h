// Global gradient-norm clipping (the norm of all gradients taken as one vector).
//
// Semantics of apex FusedLAMB and timm's Lamb (and used here for every optimizer, so grad_clip
// means the same thing whatever optim.name is): with N the global norm and c = max(N / max_norm,
// 1), every gradient is divided by c. Unlike torch::nn::utils::clip_grad_norm_, nothing is added to
// N and nothing is read back to the host: on CPU tensors the norm is computed on the host anyway
// (one fused pass), elsewhere it stays a device tensor and the division uses it as such.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <vector>

namespace batchlab::optim {

struct GradNorm {
  at::Tensor norm;  // 0-dim float64 on the gradients' device; undefined without gradients
  std::optional<double> host;  // the same value when it was computed on the host (free to read)
};

// Global L2 norm of the defined gradients of `params`. With `on_host` (the default) CPU gradients
// are summed by the fused host loops and `host` is set; otherwise, and for gradients on any other
// device, the norm stays a device tensor: one _foreach_norm over all gradients and the norm of
// their stack, a few kernel launches whatever the number of tensors, and no host read.
GradNorm global_grad_norm(const std::vector<at::Tensor>& params, bool on_host = true);

// The factor gradients are divided by: max(N / max_norm, 1), as a host value when N.host is set,
// else as a 0-dim tensor. max_norm must be > 0.
struct ClipFactor {
  at::Tensor tensor;
  std::optional<double> host;
};
ClipFactor clip_factor(const GradNorm& norm, double max_norm);

// Divides every defined gradient of `params` by the clip factor of `norm`, their global norm as
// measured by the caller (in place; skipped on the host path when the factor is 1).
void clip_grad_norm(const std::vector<at::Tensor>& params, double max_norm, const GradNorm& norm);

// The same, measuring the norm first; returns it (the norm before clipping).
GradNorm clip_grad_norm(const std::vector<at::Tensor>& params, double max_norm);

}  // namespace batchlab::optim
