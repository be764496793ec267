#include "experiments/data/transforms.h"

#include <algorithm>
#include <cmath>

#include "core/train/data_order.h"

namespace batchlab::data {

uint64_t SampleRng::next() {
  state_ += 0x9E3779B97F4A7C15ULL;
  uint64_t z = state_;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

double SampleRng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

double SampleRng::uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

int64_t SampleRng::integer(int64_t lo, int64_t hi) {
  const auto range = static_cast<uint64_t>(hi - lo) + 1;
  // Multiply-shift maps 64 random bits onto the range; the bias (range / 2^64) is negligible for
  // image-sized ranges.
  const auto high = static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * range) >> 64);
  return lo + static_cast<int64_t>(high);
}

uint64_t sample_seed(uint64_t augment_seed, int64_t position) {
  return train::mix_seed(augment_seed, static_cast<uint64_t>(position));
}

CropBox random_resized_crop(int64_t width, int64_t height, double min_scale, SampleRng& rng) {
  const double area = static_cast<double>(width) * static_cast<double>(height);
  const double log_lo = std::log(kMinAspect), log_hi = std::log(kMaxAspect);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * rng.uniform(min_scale, 1.0);
    const double aspect = std::exp(rng.uniform(log_lo, log_hi));  // width / height
    const auto w = static_cast<int64_t>(std::llround(std::sqrt(target * aspect)));
    const auto h = static_cast<int64_t>(std::llround(std::sqrt(target / aspect)));
    if (w > 0 && h > 0 && w <= width && h <= height) {
      const int64_t x = rng.integer(0, width - w);
      const int64_t y = rng.integer(0, height - h);
      return {static_cast<double>(x), static_cast<double>(y), static_cast<double>(w),
              static_cast<double>(h)};
    }
  }
  // No attempt fit (very elongated images): the largest centered box whose aspect ratio is
  // clamped into [3/4, 4/3].
  const double ratio = static_cast<double>(width) / static_cast<double>(height);
  int64_t w = width, h = height;
  if (ratio < kMinAspect) {
    h = std::min<int64_t>(height, std::llround(static_cast<double>(width) / kMinAspect));
  } else if (ratio > kMaxAspect) {
    w = std::min<int64_t>(width, std::llround(static_cast<double>(height) * kMaxAspect));
  }
  return {static_cast<double>((width - w) / 2), static_cast<double>((height - h) / 2),
          static_cast<double>(w), static_cast<double>(h)};
}

CropBox center_crop_box(int64_t width, int64_t height, int64_t resize, int64_t crop) {
  // After resizing, the shorter side is `resize`; a `crop` square there is this many source pixels.
  const double side = static_cast<double>(std::min(width, height)) * static_cast<double>(crop) /
                      static_cast<double>(resize);
  return {(static_cast<double>(width) - side) / 2.0, (static_cast<double>(height) - side) / 2.0,
          side, side};
}

SampleTransform random_transform(int64_t width, int64_t height, const TransformSpec& spec,
                                 uint64_t seed) {
  SampleRng rng(seed);
  SampleTransform t;
  t.flip = (rng.next() >> 63) != 0;
  t.box = random_resized_crop(width, height, spec.min_scale, rng);
  return t;
}

SampleTransform eval_transform(int64_t width, int64_t height, const TransformSpec& spec) {
  return {center_crop_box(width, height, spec.eval_resize, spec.image_size), false};
}

}  // namespace batchlab::data
