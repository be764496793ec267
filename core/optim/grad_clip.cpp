#include "core/optim/grad_clip.h"

#include <ATen/ATen.h>

#include <cmath>

#include "core/optim/foreach_common.h"
#include "core/optim/fused_kernels.h"
#include "core/optim/multi_tensor.h"

namespace batchlab::optim {
namespace {

std::vector<at::Tensor> defined_grads(const std::vector<at::Tensor>& params) {
  std::vector<at::Tensor> grads;
  for (const at::Tensor& p : params) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  return grads;
}

// Divides the gradients by the 0-dim `factor` with one multi-tensor op per dtype, not one op per
// tensor (a launch each on a GPU). Half-precision gradients take the factor in float32: in float16
// a factor past 65504 (a norm that far above max_norm) would be inf and zero them.
void divide_on_device(const std::vector<at::Tensor>& grads, const at::Tensor& factor) {
  std::vector<at::ScalarType> dtypes;
  std::vector<std::vector<at::Tensor>> of_dtype;
  for (const at::Tensor& g : grads) {
    size_t k = 0;
    while (k < dtypes.size() && dtypes[k] != g.scalar_type()) ++k;
    if (k == dtypes.size()) {
      dtypes.push_back(g.scalar_type());
      of_dtype.emplace_back();
    }
    of_dtype[k].push_back(g);
  }
  for (size_t k = 0; k < dtypes.size(); ++k) {
    const bool reduced = dtypes[k] == at::kHalf || dtypes[k] == at::kBFloat16;
    at::_foreach_div_(of_dtype[k], factor.to(reduced ? at::kFloat : dtypes[k]));
  }
}

}  // namespace

GradNorm global_grad_norm(const std::vector<at::Tensor>& params, bool on_host) {
  const std::vector<at::Tensor> grads = defined_grads(params);
  GradNorm out;
  if (grads.empty()) return out;
  bool host = on_host;
  for (const at::Tensor& g : grads) host = host && detail::fusable({&g});
  if (!host) {
    // Per-tensor norms stay on the device (one multi-tensor op, in float32 at least so that
    // half-precision gradients do not overflow); one more norm of their stack gives the global one.
    out.norm = at::linalg_vector_norm(at::stack(detail::foreach_norm(grads)).to(at::kDouble));
    return out;
  }
  std::vector<int64_t> numels;
  for (const at::Tensor& g : grads) numels.push_back(g.numel());
  std::vector<int64_t> first;
  const std::vector<detail::Chunk> chunks = detail::plan_chunks(numels, &first);
  std::vector<double> partial(chunks.size(), 0.0);
  detail::parallel_ranges(static_cast<int64_t>(chunks.size()), [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      const detail::Chunk& ch = chunks[c];
      const at::Tensor& g = grads[ch.item];
      const int64_t n = ch.end - ch.begin;
      partial[c] = g.scalar_type() == at::kFloat
                       ? kernels::sum_squares(g.data_ptr<float>() + ch.begin, n)
                       : kernels::sum_squares(g.data_ptr<double>() + ch.begin, n);
    }
  });
  double total = 0.0;
  for (double s : partial) total += s;  // chunk order: independent of the thread count
  out.host = std::sqrt(total);
  out.norm = at::scalar_tensor(*out.host, at::TensorOptions().dtype(at::kDouble));
  return out;
}

ClipFactor clip_factor(const GradNorm& norm, double max_norm) {
  ClipFactor out;
  if (norm.host) {
    out.host = std::max(*norm.host / max_norm, 1.0);
    out.tensor = at::scalar_tensor(*out.host, at::TensorOptions().dtype(at::kDouble));
  } else if (norm.norm.defined()) {
    out.tensor = (norm.norm / max_norm).clamp_min(1.0);
  }
  return out;
}

void clip_grad_norm(const std::vector<at::Tensor>& params, double max_norm, const GradNorm& norm) {
  at::NoGradGuard no_grad;
  if (!norm.norm.defined()) return;
  const ClipFactor factor = clip_factor(norm, max_norm);
  const std::vector<at::Tensor> grads = defined_grads(params);
  if (factor.host) {
    if (*factor.host == 1.0) return;
    const double inv = 1.0 / *factor.host;
    std::vector<int64_t> numels;
    for (const at::Tensor& g : grads) numels.push_back(g.numel());
    const std::vector<detail::Chunk> chunks = detail::plan_chunks(numels, nullptr);
    detail::parallel_ranges(static_cast<int64_t>(chunks.size()), [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        const detail::Chunk& ch = chunks[c];
        const at::Tensor& g = grads[ch.item];
        const int64_t n = ch.end - ch.begin;
        if (g.scalar_type() == at::kFloat) {
          kernels::scale(g.data_ptr<float>() + ch.begin, n, inv);
        } else {
          kernels::scale(g.data_ptr<double>() + ch.begin, n, inv);
        }
      }
    });
    for (const at::Tensor& g : grads) detail::bump_version(g);
    return;
  }
  divide_on_device(grads, factor.tensor);
}

GradNorm clip_grad_norm(const std::vector<at::Tensor>& params, double max_norm) {
  GradNorm norm = global_grad_norm(params);
  clip_grad_norm(params, max_norm, norm);
  return norm;
}

}  // namespace batchlab::optim
