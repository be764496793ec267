// Element loops of the fused optimizer steps, over raw float/double arrays of n elements.
//
// Optimizer steps are memory-bound: their cost is the number of passes over parameter-sized arrays.
// Each function below is ONE pass that reads and writes every array it is given exactly once and
// keeps all intermediates in registers. The callers (lars.cpp, lamb.cpp, grad_clip.cpp) split every
// tensor into chunks (multi_tensor.h) and run these on the chunks in parallel.
//
// The loops use GCC/Clang vector extensions and are compiled twice: for AVX2 (picked at run time
// when the CPU has it) and for the baseline instruction set. Both builds do the same IEEE
// operations in the same order (neither may contract into FMA), so the result does not depend on
// which one runs. Norms are sums of squares accumulated per lane in the array type and returned as
// double; callers add chunk results in a fixed order, so a norm does not depend on the thread count
// either.
#pragma once

#include <cstdint>

namespace batchlab::optim::kernels {

// "avx2" or "baseline": which build of the loops this process uses.
const char* instruction_set();

// sum x[i]^2.
double sum_squares(const float* x, int64_t n);
double sum_squares(const double* x, int64_t n);

// out[0] = sum a[i]^2, out[1] = sum b[i]^2 (LARS: ||w||^2 and ||g||^2 in one pass).
void sum_squares2(const float* a, const float* b, int64_t n, double out[2]);
void sum_squares2(const double* a, const double* b, int64_t n, double out[2]);

// x[i] *= s (global gradient clipping).
void scale(float* x, int64_t n, double s);
void scale(double* x, int64_t n, double s);

// One LARS update of w (and its momentum buffer):
//   d = (g + weight_decay * w) * ratio
//   buf = momentum * buf + in_scale * d                      (skipped when buf is null)
//   u = nesterov ? in_scale * d + momentum * buf : buf       (u = in_scale * d without buffer)
//   w -= out_scale * u
// PyTorch/timm form: in_scale = 1, out_scale = lr. Paper/MLPerf form: in_scale = lr, out_scale = 1.
struct LarsScalars {
  double weight_decay = 0.0;
  double ratio = 1.0;
  double momentum = 0.0;
  double in_scale = 1.0;
  double out_scale = 0.0;
  bool nesterov = false;
};
void lars_update(float* w, const float* g, float* buf, int64_t n, const LarsScalars& s);
void lars_update(double* w, const double* g, double* buf, int64_t n, const LarsScalars& s);

// LAMB (timm/apex FusedLAMB form) with g already divided by the global clip factor through
// grad_scale:
//   gs = grad_scale * g
//   m = beta1 * m + beta3 * gs,  v = beta2 * v + (1 - beta2) * gs^2
//   r = (m * inv_bc1) / (sqrt(v) * inv_sqrt_bc2 + eps) + weight_decay * w
struct LambScalars {
  double grad_scale = 1.0;
  double beta1 = 0.9;
  double beta3 = 0.1;  // 1 - beta1 with grad averaging, else 1
  double beta2 = 0.999;
  double inv_bc1 = 1.0;
  double inv_sqrt_bc2 = 1.0;
  double eps = 1e-6;
  double weight_decay = 0.0;
};
// Pass 1 of an adapted parameter: updates m, v; out[0] = ||w||^2, out[1] = ||r||^2 (w not written).
void lamb_moments(const float* g, float* m, float* v, const float* w, int64_t n,
                  const LambScalars& s, double out[2]);
void lamb_moments(const double* g, double* m, double* v, const double* w, int64_t n,
                  const LambScalars& s, double out[2]);
// Pass 2 of an adapted parameter: recomputes r from the new m, v and w -= step_size * r
// (step_size = lr * trust ratio). Recomputing costs two reads instead of a write and a read of a
// stored r.
void lamb_apply(float* w, const float* m, const float* v, int64_t n, const LambScalars& s,
                double step_size);
void lamb_apply(double* w, const double* m, const double* v, int64_t n, const LambScalars& s,
                double step_size);
// A parameter without trust ratio needs no norms: moments and w -= step_size * r in a single pass.
void lamb_fused(float* w, const float* g, float* m, float* v, int64_t n, const LambScalars& s,
                double step_size);
void lamb_fused(double* w, const double* g, double* m, double* v, int64_t n, const LambScalars& s,
                double step_size);

}  // namespace batchlab::optim::kernels
