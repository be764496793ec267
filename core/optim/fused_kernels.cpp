#include "core/optim/fused_kernels.h"

#include <cmath>
#include <cstddef>
#include <cstdint>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define BATCHLAB_X86_64 1
#endif

namespace batchlab::optim::kernels {

// ---- AVX2 build: 256-bit vectors, chosen at run time on CPUs that have AVX2. ----
// The target pragma covers only functions defined below it in this file (all in an internal
// namespace), so no inline function shared with other files is ever compiled for AVX2. FMA is left
// out on purpose: GCC contracts a * b + c in C++ by default, which would round differently from the
// baseline build; these loops are memory-bound, so fused multiply-adds would buy nothing.
#ifdef BATCHLAB_X86_64
#pragma GCC push_options
#pragma GCC target("avx2")
namespace avx2 {
namespace {
typedef float VF __attribute__((vector_size(32)));
typedef double VD __attribute__((vector_size(32)));
inline VF vsqrt(VF x) { return reinterpret_cast<VF>(_mm256_sqrt_ps(reinterpret_cast<__m256>(x))); }
inline VD vsqrt(VD x) { return reinterpret_cast<VD>(_mm256_sqrt_pd(reinterpret_cast<__m256d>(x))); }
#include "core/optim/fused_kernels_impl.h"  // NOLINT(build/include): the loops, for AVX2
}  // namespace

// Out-of-line entry points, so that the dispatcher below calls AVX2 code only through them.
double sum_squares(const float* x, int64_t n) { return sum_squares_impl(x, n); }
double sum_squares(const double* x, int64_t n) { return sum_squares_impl(x, n); }
void sum_squares2(const float* a, const float* b, int64_t n, double o[2]) {
  sum_squares2_impl(a, b, n, o);
}
void sum_squares2(const double* a, const double* b, int64_t n, double o[2]) {
  sum_squares2_impl(a, b, n, o);
}
void scale(float* x, int64_t n, double s) { scale_impl(x, n, s); }
void scale(double* x, int64_t n, double s) { scale_impl(x, n, s); }
void lars_update(float* w, const float* g, float* b, int64_t n, const LarsScalars& s) {
  lars_update_impl(w, g, b, n, s);
}
void lars_update(double* w, const double* g, double* b, int64_t n, const LarsScalars& s) {
  lars_update_impl(w, g, b, n, s);
}
void lamb_moments(const float* g, float* m, float* v, const float* w, int64_t n,
                  const LambScalars& s, double o[2]) {
  lamb_moments_impl(g, m, v, w, n, s, o);
}
void lamb_moments(const double* g, double* m, double* v, const double* w, int64_t n,
                  const LambScalars& s, double o[2]) {
  lamb_moments_impl(g, m, v, w, n, s, o);
}
void lamb_apply(float* w, const float* m, const float* v, int64_t n, const LambScalars& s,
                double st) {
  lamb_apply_impl(w, m, v, n, s, st);
}
void lamb_apply(double* w, const double* m, const double* v, int64_t n, const LambScalars& s,
                double st) {
  lamb_apply_impl(w, m, v, n, s, st);
}
void lamb_fused(float* w, const float* g, float* m, float* v, int64_t n, const LambScalars& s,
                double st) {
  lamb_fused_impl(w, g, m, v, n, s, st);
}
void lamb_fused(double* w, const double* g, double* m, double* v, int64_t n, const LambScalars& s,
                double st) {
  lamb_fused_impl(w, g, m, v, n, s, st);
}
}  // namespace avx2
#pragma GCC pop_options
#endif  // BATCHLAB_X86_64

// ---- Baseline build: 128-bit vectors (SSE2 on x86-64, NEON-width elsewhere). ----
namespace baseline {
namespace {
typedef float VF __attribute__((vector_size(16)));
typedef double VD __attribute__((vector_size(16)));
#ifdef BATCHLAB_X86_64
inline VF vsqrt(VF x) { return reinterpret_cast<VF>(_mm_sqrt_ps(reinterpret_cast<__m128>(x))); }
inline VD vsqrt(VD x) { return reinterpret_cast<VD>(_mm_sqrt_pd(reinterpret_cast<__m128d>(x))); }
#else
template <class V>
inline V vsqrt(V x) {
  for (size_t i = 0; i < sizeof(V) / sizeof(x[0]); ++i) x[i] = std::sqrt(x[i]);
  return x;
}
#endif
#include "core/optim/fused_kernels_impl.h"  // NOLINT(build/include): the loops, baseline
}  // namespace
}  // namespace baseline

namespace {

bool detect_avx2() {
#ifdef BATCHLAB_X86_64
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

// Decided once; every call after that is a predictable branch.
const bool kUseAvx2 = detect_avx2();

}  // namespace

#ifdef BATCHLAB_X86_64
#define BATCHLAB_DISPATCH(fn, ...) \
  (kUseAvx2 ? avx2::fn(__VA_ARGS__) : baseline::fn##_impl(__VA_ARGS__))
#else
#define BATCHLAB_DISPATCH(fn, ...) baseline::fn##_impl(__VA_ARGS__)
#endif

const char* instruction_set() { return kUseAvx2 ? "avx2" : "baseline"; }

double sum_squares(const float* x, int64_t n) { return BATCHLAB_DISPATCH(sum_squares, x, n); }
double sum_squares(const double* x, int64_t n) { return BATCHLAB_DISPATCH(sum_squares, x, n); }

void sum_squares2(const float* a, const float* b, int64_t n, double out[2]) {
  BATCHLAB_DISPATCH(sum_squares2, a, b, n, out);
}
void sum_squares2(const double* a, const double* b, int64_t n, double out[2]) {
  BATCHLAB_DISPATCH(sum_squares2, a, b, n, out);
}

void scale(float* x, int64_t n, double s) { BATCHLAB_DISPATCH(scale, x, n, s); }
void scale(double* x, int64_t n, double s) { BATCHLAB_DISPATCH(scale, x, n, s); }

void lars_update(float* w, const float* g, float* buf, int64_t n, const LarsScalars& s) {
  BATCHLAB_DISPATCH(lars_update, w, g, buf, n, s);
}
void lars_update(double* w, const double* g, double* buf, int64_t n, const LarsScalars& s) {
  BATCHLAB_DISPATCH(lars_update, w, g, buf, n, s);
}

void lamb_moments(const float* g, float* m, float* v, const float* w, int64_t n,
                  const LambScalars& s, double out[2]) {
  BATCHLAB_DISPATCH(lamb_moments, g, m, v, w, n, s, out);
}
void lamb_moments(const double* g, double* m, double* v, const double* w, int64_t n,
                  const LambScalars& s, double out[2]) {
  BATCHLAB_DISPATCH(lamb_moments, g, m, v, w, n, s, out);
}

void lamb_apply(float* w, const float* m, const float* v, int64_t n, const LambScalars& s,
                double step_size) {
  BATCHLAB_DISPATCH(lamb_apply, w, m, v, n, s, step_size);
}
void lamb_apply(double* w, const double* m, const double* v, int64_t n, const LambScalars& s,
                double step_size) {
  BATCHLAB_DISPATCH(lamb_apply, w, m, v, n, s, step_size);
}

void lamb_fused(float* w, const float* g, float* m, float* v, int64_t n, const LambScalars& s,
                double step_size) {
  BATCHLAB_DISPATCH(lamb_fused, w, g, m, v, n, s, step_size);
}
void lamb_fused(double* w, const double* g, double* m, double* v, int64_t n, const LambScalars& s,
                double step_size) {
  BATCHLAB_DISPATCH(lamb_fused, w, g, m, v, n, s, step_size);
}

#undef BATCHLAB_DISPATCH

}  // namespace batchlab::optim::kernels
