#include "experiments/data/image_resample.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/errors.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define BATCHLAB_RESAMPLE_AVX2 1
#endif

namespace batchlab::data {
namespace {

// Four floats in one SSE/NEON register (GCC/Clang vector extension): one pixel's R, G, B and a
// lane that is computed and dropped.
typedef float Float4 __attribute__((vector_size(16)));
typedef int32_t Int4 __attribute__((vector_size(16)));

// Where the horizontal pass writes output pixel x of row y.
template <bool Chw>
inline void store_pixel(uint8_t* out, int64_t out_w, int64_t plane, int64_t y, int64_t x, int32_t r,
                        int32_t g, int32_t b) {
  if constexpr (Chw) {
    uint8_t* o = out + y * out_w + x;
    o[0] = static_cast<uint8_t>(r);
    o[plane] = static_cast<uint8_t>(g);
    o[2 * plane] = static_cast<uint8_t>(b);
  } else {
    uint8_t* o = out + (y * out_w + x) * 3;
    o[0] = static_cast<uint8_t>(r);
    o[1] = static_cast<uint8_t>(g);
    o[2] = static_cast<uint8_t>(b);
  }
}

// Vertical pass for output row y: row[0, span) = sum_k w_k * source row (start + k), over the
// columns the horizontal pass reads. Plain loops the compiler vectorizes (SSE2, or AVX2 when
// inlined into the AVX2 entry point); the same operations in the same order either way, so both
// paths give identical bytes.
__attribute__((always_inline)) inline void vertical_pass(const ImageView& src,
                                                         const ResampleFilter& fy, int64_t y,
                                                         int64_t col_lo, int64_t span, float* row) {
  const float* w = fy.weights.data() + y * fy.taps;
  const int64_t first = fy.start[static_cast<size_t>(y)];
  const uint8_t* s0 = src.pixels + first * src.stride + col_lo * 3;
  const float w0 = w[0];
  for (int64_t i = 0; i < span; ++i) row[i] = w0 * static_cast<float>(s0[i]);
  for (int64_t k = 1; k < fy.taps; ++k) {
    const float wk = w[k];
    if (wk == 0.0f) continue;
    const uint8_t* s = src.pixels + (first + k) * src.stride + col_lo * 3;
    for (int64_t i = 0; i < span; ++i) row[i] += wk * static_cast<float>(s[i]);
  }
}

// Horizontal pass, portable: one output pixel's RGB per 4-lane vector, K taps (0 = fx.taps).
template <int K, bool Chw>
void horizontal_pass(const float* row, const ResampleFilter& fx, int64_t col_lo, int64_t y,
                     int64_t out_w, int64_t plane, uint8_t* out) {
  const int64_t taps = K > 0 ? K : fx.taps;
  const Float4 zero = {0.0f, 0.0f, 0.0f, 0.0f};
  const Float4 top = {255.0f, 255.0f, 255.0f, 255.0f};
  for (int64_t x = 0; x < out_w; ++x) {
    const float* w = fx.weights.data() + x * taps;
    const float* p = row + (fx.start[static_cast<size_t>(x)] - col_lo) * 3;
    Float4 acc = {0.5f, 0.5f, 0.5f, 0.5f};  // rounding offset: truncation below rounds to nearest
    for (int64_t k = 0; k < taps; ++k) {
      Float4 v;
      std::memcpy(&v, p + 3 * k, sizeof(v));
      acc += w[k] * v;
    }
    acc = acc < zero ? zero : acc;
    acc = acc > top ? top : acc;
    const Int4 q = __builtin_convertvector(acc, Int4);
    store_pixel<Chw>(out, out_w, plane, y, x, q[0], q[1], q[2]);
  }
}

#ifdef BATCHLAB_RESAMPLE_AVX2
// The same arithmetic two pixels per 8-lane vector (separate multiply and add, no FMA, so the
// result is bit-identical to the portable pass).
template <int K, bool Chw>
__attribute__((target("avx2"))) void horizontal_pass_avx2(const float* row,
                                                          const ResampleFilter& fx, int64_t col_lo,
                                                          int64_t y, int64_t out_w, int64_t plane,
                                                          uint8_t* out) {
  const int64_t taps = K > 0 ? K : fx.taps;
  const __m256 zero = _mm256_setzero_ps(), top = _mm256_set1_ps(255.0f);
  int64_t x = 0;
  for (; x + 1 < out_w; x += 2) {
    const float* w0 = fx.weights.data() + x * taps;
    const float* w1 = w0 + taps;
    const float* p0 = row + (fx.start[static_cast<size_t>(x)] - col_lo) * 3;
    const float* p1 = row + (fx.start[static_cast<size_t>(x + 1)] - col_lo) * 3;
    __m256 acc = _mm256_set1_ps(0.5f);
    for (int64_t k = 0; k < taps; ++k) {
      const __m256 v = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(p0 + 3 * k)),
                                            _mm_loadu_ps(p1 + 3 * k), 1);
      const __m256 wk =
          _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_set1_ps(w0[k])), _mm_set1_ps(w1[k]), 1);
      acc = _mm256_add_ps(acc, _mm256_mul_ps(wk, v));
    }
    acc = _mm256_min_ps(_mm256_max_ps(acc, zero), top);
    alignas(32) int32_t q[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(q), _mm256_cvttps_epi32(acc));
    store_pixel<Chw>(out, out_w, plane, y, x, q[0], q[1], q[2]);
    store_pixel<Chw>(out, out_w, plane, y, x + 1, q[4], q[5], q[6]);
  }
  if (x < out_w) {
    // Odd width: the last pixel through the portable loop's arithmetic.
    const float* w = fx.weights.data() + x * taps;
    const float* p = row + (fx.start[static_cast<size_t>(x)] - col_lo) * 3;
    __m128 acc = _mm_set1_ps(0.5f);
    for (int64_t k = 0; k < taps; ++k)
      acc = _mm_add_ps(acc, _mm_mul_ps(_mm_set1_ps(w[k]), _mm_loadu_ps(p + 3 * k)));
    acc = _mm_min_ps(_mm_max_ps(acc, _mm_setzero_ps()), _mm_set1_ps(255.0f));
    alignas(16) int32_t q[4];
    _mm_store_si128(reinterpret_cast<__m128i*>(q), _mm_cvttps_epi32(acc));
    store_pixel<Chw>(out, out_w, plane, y, x, q[0], q[1], q[2]);
  }
}
#endif

// One function per (instruction set, tap count, layout); the tap count is a template argument so
// the inner loop is unrolled. Reductions by more than 4x (8 taps) take the generic loop.
using HorizontalPass = void (*)(const float*, const ResampleFilter&, int64_t, int64_t, int64_t,
                                int64_t, uint8_t*);

template <bool Chw>
HorizontalPass pick_portable(int64_t taps) {
  switch (taps) {
    case 1:
      return horizontal_pass<1, Chw>;
    case 2:
      return horizontal_pass<2, Chw>;
    case 3:
      return horizontal_pass<3, Chw>;
    case 4:
      return horizontal_pass<4, Chw>;
    case 5:
      return horizontal_pass<5, Chw>;
    case 6:
      return horizontal_pass<6, Chw>;
    case 7:
      return horizontal_pass<7, Chw>;
    case 8:
      return horizontal_pass<8, Chw>;
    default:
      return horizontal_pass<0, Chw>;
  }
}

#ifdef BATCHLAB_RESAMPLE_AVX2
template <bool Chw>
HorizontalPass pick_avx2(int64_t taps) {
  switch (taps) {
    case 1:
      return horizontal_pass_avx2<1, Chw>;
    case 2:
      return horizontal_pass_avx2<2, Chw>;
    case 3:
      return horizontal_pass_avx2<3, Chw>;
    case 4:
      return horizontal_pass_avx2<4, Chw>;
    case 5:
      return horizontal_pass_avx2<5, Chw>;
    case 6:
      return horizontal_pass_avx2<6, Chw>;
    case 7:
      return horizontal_pass_avx2<7, Chw>;
    case 8:
      return horizontal_pass_avx2<8, Chw>;
    default:
      return horizontal_pass_avx2<0, Chw>;
  }
}

bool cpu_has_avx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}

__attribute__((target("avx2"))) void rows_avx2(const ImageView& src, const ResampleScratch& s,
                                               int64_t col_lo, int64_t span, int64_t out_w,
                                               int64_t out_h, HorizontalPass pass, float* row,
                                               uint8_t* out) {
  for (int64_t y = 0; y < out_h; ++y) {
    vertical_pass(src, s.vertical, y, col_lo, span, row);
    pass(row, s.horizontal, col_lo, y, out_w, out_w * out_h, out);
  }
}
#endif

void rows_portable(const ImageView& src, const ResampleScratch& s, int64_t col_lo, int64_t span,
                   int64_t out_w, int64_t out_h, HorizontalPass pass, float* row, uint8_t* out) {
  for (int64_t y = 0; y < out_h; ++y) {
    vertical_pass(src, s.vertical, y, col_lo, span, row);
    pass(row, s.horizontal, col_lo, y, out_w, out_w * out_h, out);
  }
}

}  // namespace

void build_resample_filter(double offset, double length, int64_t count, int64_t limit,
                           ResampleFilter& filter) {
  const double scale = length / static_cast<double>(count);  // source pixels per output pixel
  // Half-width of the triangle in source pixels: 1 when enlarging (plain bilinear), the reduction
  // factor when shrinking (antialiasing). An open interval of width 2 * support holds at most
  // ceil(2 * support) pixel centers with a non-zero weight.
  const double support = std::max(1.0, scale);
  const int64_t taps =
      std::clamp<int64_t>(static_cast<int64_t>(std::ceil(2.0 * support)), 1, limit);
  filter.taps = taps;
  filter.start.resize(static_cast<size_t>(count));
  filter.weights.assign(static_cast<size_t>(count * taps), 0.0f);
  for (int64_t i = 0; i < count; ++i) {
    // Source coordinate of output pixel i's center; source pixel p's center is at p + 0.5.
    const double center = offset + (static_cast<double>(i) + 0.5) * scale;
    auto weight = [&](int64_t p) {
      return std::max(0.0, 1.0 - std::abs((static_cast<double>(p) + 0.5 - center) / support));
    };
    int64_t lo = std::max<int64_t>(0, static_cast<int64_t>(std::ceil(center - support - 0.5)));
    const int64_t hi =
        std::min<int64_t>(limit - 1, static_cast<int64_t>(std::floor(center + support - 0.5)));
    while (lo <= hi && weight(lo) <= 0.0) ++lo;  // first pixel that actually contributes
    const int64_t start = std::max<int64_t>(0, std::min(lo, limit - taps));
    float* w = filter.weights.data() + i * taps;
    double sum = 0.0;
    for (int64_t p = lo; p <= hi && p - start < taps; ++p) {
      const double t = weight(p);
      w[p - start] = static_cast<float>(t);
      sum += t;
    }
    if (sum > 0.0) {
      for (int64_t k = 0; k < taps; ++k) w[k] = static_cast<float>(w[k] / sum);
    } else {
      // The center lies outside the image (a box reaching past the border): nearest pixel.
      const int64_t p = std::clamp<int64_t>(static_cast<int64_t>(std::floor(center)), 0, limit - 1);
      std::fill(w, w + taps, 0.0f);
      w[p - start] = 1.0f;
    }
    filter.start[static_cast<size_t>(i)] = start;
  }
}

void resample_crop(const ImageView& src, const CropBox& box, int64_t out_w, int64_t out_h,
                   bool flip, PixelLayout layout, uint8_t* out, ResampleScratch& scratch) {
  if (src.width <= 0 || src.height <= 0 || out_w <= 0 || out_h <= 0 || box.width <= 0 ||
      box.height <= 0) {
    throw Error(fmt::format("resample_crop: empty image ({}x{}), box ({}x{}) or output ({}x{})",
                            src.width, src.height, box.width, box.height, out_w, out_h));
  }
  ResampleFilter& fx = scratch.horizontal;
  build_resample_filter(box.x, box.width, out_w, src.width, fx);
  build_resample_filter(box.y, box.height, out_h, src.height, scratch.vertical);
  // Source columns any output reads: the vertical pass only combines these.
  const int64_t col_lo = fx.start.front();
  const int64_t col_hi = std::min(src.width, fx.start.back() + fx.taps);
  if (flip) {
    // Mirroring = output x takes the filter of output out_w - 1 - x.
    std::reverse(fx.start.begin(), fx.start.end());
    for (int64_t a = 0, b = out_w - 1; a < b; ++a, --b) {
      std::swap_ranges(fx.weights.begin() + a * fx.taps, fx.weights.begin() + (a + 1) * fx.taps,
                       fx.weights.begin() + b * fx.taps);
    }
  }
  const int64_t span = (col_hi - col_lo) * 3;
  // One spare float so the last pixel's 4-lane load stays inside the buffer.
  scratch.row.resize(static_cast<size_t>(span + 1));
  scratch.row[static_cast<size_t>(span)] = 0.0f;

  const bool chw = layout == PixelLayout::chw;
#ifdef BATCHLAB_RESAMPLE_AVX2
  if (cpu_has_avx2()) {
    rows_avx2(src, scratch, col_lo, span, out_w, out_h,
              chw ? pick_avx2<true>(fx.taps) : pick_avx2<false>(fx.taps), scratch.row.data(), out);
    return;
  }
#endif
  rows_portable(src, scratch, col_lo, span, out_w, out_h,
                chw ? pick_portable<true>(fx.taps) : pick_portable<false>(fx.taps),
                scratch.row.data(), out);
}

}  // namespace batchlab::data
