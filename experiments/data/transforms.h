// Geometry of the ImageNet transforms, decided from the image's size and a seed before any pixel is
// decoded (so the decoder can pick its DCT scaling factor from the crop):
//   training:   random-resized-crop (area fraction in [min_scale, 1], aspect ratio log-uniform in
//               [3/4, 4/3], 10 attempts then a center crop at the nearest allowed ratio, as
//               torchvision's RandomResizedCrop) to image_size x image_size, and a horizontal flip
//               with probability 1/2;
//   evaluation: the shorter side resized to eval_resize, then the central image_size square
//               (expressed as one box in source pixels and resampled once, which differs from
//               torchvision's resize-then-crop only by its sub-pixel rounding of the crop offset).
// Every random draw comes from the sample's own seed, mix_seed(augment_seed, position in batch),
// so a sample's transform does not depend on which thread builds it or what was built before.
#pragma once

#include <cstdint>
#include <optional>

#include "experiments/data/image_resample.h"

namespace batchlab::data {

// A small counter-based generator (SplitMix64): cheap to create per sample, identical on every
// platform (unlike std::uniform_*_distribution, whose algorithms are implementation-defined).
class SampleRng {
 public:
  explicit SampleRng(uint64_t seed) : state_(seed) {}
  uint64_t next();
  double uniform();                         // [0, 1), 53 random bits
  double uniform(double lo, double hi);     // [lo, hi)
  int64_t integer(int64_t lo, int64_t hi);  // inclusive range [lo, hi]

 private:
  uint64_t state_;
};

struct TransformSpec {
  int64_t image_size = 224;  // output side
  int64_t eval_resize = 256;
  double min_scale = 0.08;
};

struct SampleTransform {
  CropBox box;  // in source pixels
  bool flip = false;
};

inline constexpr double kMinAspect = 3.0 / 4.0;
inline constexpr double kMaxAspect = 4.0 / 3.0;

// The seed of the sample at `position` of a batch built with `augment_seed`.
uint64_t sample_seed(uint64_t augment_seed, int64_t position);

// Integer crop box of a width x height image (torchvision's RandomResizedCrop geometry).
CropBox random_resized_crop(int64_t width, int64_t height, double min_scale, SampleRng& rng);

// The source box that "shorter side to `resize`, then the central `crop` square" shows.
CropBox center_crop_box(int64_t width, int64_t height, int64_t resize, int64_t crop);

// Training transform (crop and flip) drawn from `seed`.
SampleTransform random_transform(int64_t width, int64_t height, const TransformSpec& spec,
                                 uint64_t seed);

// Evaluation transform: deterministic, no flip.
SampleTransform eval_transform(int64_t width, int64_t height, const TransformSpec& spec);

}  // namespace batchlab::data
