#include "core/optim/newton_schulz.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "core/errors.h"

namespace batchlab::optim {

at::Tensor newton_schulz(const at::Tensor& g, const NewtonSchulz& ns) {
  if (g.dim() != 2) {
    throw Error(
        fmt::format("Newton-Schulz: the input has {} dimensions; Muon orthogonalizes "
                    "2-D matrices only",
                    g.dim()));
  }
  if (ns.steps < 0 || ns.steps >= 100) {
    throw Error(fmt::format("Newton-Schulz: {} steps (must be in [0, 100))", ns.steps));
  }
  const auto [a, b, c] = ns.coefficients;
  const bool tall = g.size(0) > g.size(1);
  // Always a copy: torch's grad.bfloat16() returns a bf16 input itself, and its in-place division
  // below would then rescale the caller's tensor (Muon's momentum buffer, for bf16 parameters
  // without Nesterov). Tensor.norm() in Python is linalg.vector_norm(x, 2), called as such here.
  at::Tensor x = g.to(ns.dtype, /*non_blocking=*/false, /*copy=*/true);
  if (tall) x = x.t();
  x.div_(at::linalg_vector_norm(x, 2).clamp_min(ns.eps));
  for (int64_t i = 0; i < ns.steps; ++i) {
    const at::Tensor gram = x.matmul(x.t());
    const at::Tensor update = at::addmm(gram, gram, gram, b, c);
    x = at::addmm(x, update, x, a);
  }
  return tall ? x.t() : x;
}

}  // namespace batchlab::optim
