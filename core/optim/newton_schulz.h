// Muon's orthogonalization: a quintic Newton-Schulz iteration that maps a matrix G = U S V^T to
// about U V^T (its singular values pushed into roughly [0.7, 1.2], not exactly 1: the coefficients
// maximize the slope at zero instead of converging; Keller Jordan, "Muon: An optimizer for hidden
// layers in neural networks", 2024).
//
// As torch.optim.Muon computes it (torch/optim/_muon.py, _zeropower_via_newtonschulz, torch
// 2.14.1), op for op, so that in bfloat16 the result is the same bits on the same LibTorch build:
//   X = G cast to `dtype` (torch: bfloat16 always);  X = X^T when G has more rows than columns
//   (so X X^T is the smaller Gram matrix: [min(r,c), min(r,c)])
//   X = X / max(||X||_F, eps)               the Frobenius norm bounds the spectral norm by 1
//   repeat `steps` times:
//     A = X X^T                             [m, m], m = min(rows, cols)
//     B = b * A + c * A A                   one addmm
//     X = a * X + B X                       one addmm
//   transpose back; the result has G's shape and `dtype`.
// Cost: 3 matrix products per iteration, 2 m^2 n + 2 m^3 + 2 m^2 n flops with n = max(rows, cols).
//
// bfloat16 is the reference and the default: the iteration is numerically forgiving (its fixed
// points are an interval, not a point), and a bf16 product runs 2-16x faster than a float32 one on
// hardware with bf16 units. float32 (optim.ns_dtype = "fp32") is offered for hardware without
// them (most CPUs convert bf16 in software) and to separate the orthogonalization's rounding from
// an experiment's effect. A bf16 product's bits depend on its summation order, so a different GEMM
// kernel (another CPU's instruction set, a GPU) gives results that differ from torch's on this
// machine by about one bf16 unit (2^-8 relative) per element.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>

namespace batchlab::optim {

struct NewtonSchulz {
  std::array<double, 3> coefficients = {3.4445, -4.7750, 2.0315};  // (a, b, c), torch's defaults
  int64_t steps = 5;
  double eps = 1e-7;  // floor of the norm X is divided by (torch's EPS)
  at::ScalarType dtype = at::kBFloat16;
};

// The orthogonalized `g` ([rows, cols], any floating dtype), in ns.dtype. Precondition: g is 2-D
// and ns.steps is in [0, 100) (torch's own limit); a batchlab::Error otherwise.
at::Tensor newton_schulz(const at::Tensor& g, const NewtonSchulz& ns);

}  // namespace batchlab::optim
