#include "experiments/data/synthetic_images.h"

#include <ATen/Parallel.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/errors.h"

namespace batchlab::data {
namespace {

// Counter-based streams: one per (seed, stream, index), so any sample can be generated on its own.
constexpr uint64_t kTrainStream = 0;
constexpr uint64_t kTestStream = 1;
constexpr uint64_t kPrototypeStream = 2;

// Stroke profile: intensity exp(-d^2 / (2 sigma^2)) at distance d (pixels) from the segment.
constexpr double kStrokeSigma = 1.0;
// Pixels farther than this from a stroke are left alone: its intensity there, exp(-72) ~ 5e-32,
// cannot move a pixel across a quantization step, and skipping them makes prototypes of large
// images (ImageNet-shaped: 1000 classes x 3 channels x 224 x 224) cheap.
constexpr double kStrokeReach = 12.0 * kStrokeSigma;
// Stroke endpoints keep this far from the border so a shifted prototype stays mostly in view.
constexpr int64_t kStrokeMargin = 4;
constexpr double kMaxBackground = 0.1;
constexpr double kPi = 3.14159265358979323846;

// SplitMix64 (Steele et al. 2014): a full-period 64-bit generator whose output is specified
// bit-for-bit, plus Box-Muller normals. Enough quality for test data, identical everywhere.
class Rng {
 public:
  explicit Rng(uint64_t state) : state_(state) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Uniform integer in [lo, hi]; the modulo bias (< 2^-50 here) does not matter for test data.
  int64_t integer(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = 1.0 - uniform();  // (0, 1]: log stays finite
    const double u2 = uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double theta = 2.0 * kPi * u2;
    spare_ = r * std::sin(theta);
    has_spare_ = true;
    return r * std::cos(theta);
  }

 private:
  uint64_t state_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

uint64_t mix(uint64_t x) { return Rng(x).next(); }

uint64_t stream_state(int64_t seed, uint64_t stream, uint64_t index) {
  return mix(mix(mix(static_cast<uint64_t>(seed)) ^ stream) ^ index);
}

// Class prototypes, float [classes][channels][height][width] flattened, values in [0, 1].
class Prototypes {
 public:
  Prototypes(const SyntheticImageOptions& o, int64_t seed)
      : o_(o), data_(static_cast<size_t>(o.num_classes * o.channels * o.height * o.width), 0.0f) {
    // Classes are independent (a stream each) and write disjoint planes: drawn in parallel.
    at::parallel_for(0, o.num_classes, 1, [&](int64_t begin, int64_t end) {
      for (int64_t k = begin; k < end; ++k) draw_class(k, seed);
    });
  }

  // Prototype value at (y, x), 0 outside the image (what a shift brings into view).
  float at(int64_t k, int64_t c, int64_t y, int64_t x) const {
    if (y < 0 || y >= o_.height || x < 0 || x >= o_.width) return 0.0f;
    return data_[static_cast<size_t>(((k * o_.channels + c) * o_.height + y) * o_.width + x)];
  }

 private:
  void draw_class(int64_t k, int64_t seed) {
    Rng rng(stream_state(seed, kPrototypeStream, static_cast<uint64_t>(k)));
    for (int64_t c = 0; c < o_.channels; ++c) {
      for (int64_t s = 0; s < o_.strokes_per_class; ++s) {
        const double y0 =
            rng.uniform(kStrokeMargin, static_cast<double>(o_.height - kStrokeMargin));
        const double x0 = rng.uniform(kStrokeMargin, static_cast<double>(o_.width - kStrokeMargin));
        const double y1 =
            rng.uniform(kStrokeMargin, static_cast<double>(o_.height - kStrokeMargin));
        const double x1 = rng.uniform(kStrokeMargin, static_cast<double>(o_.width - kStrokeMargin));
        draw_stroke(k, c, y0, x0, y1, x1);
      }
    }
  }

  // Soft segment: each pixel takes the max of its value and the stroke's intensity there.
  void draw_stroke(int64_t k, int64_t c, double y0, double x0, double y1, double x1) {
    const double dy = y1 - y0;
    const double dx = x1 - x0;
    const double len2 = std::max(dy * dy + dx * dx, 1e-12);
    for (int64_t y = 0; y < o_.height; ++y) {
      for (int64_t x = 0; x < o_.width; ++x) {
        // Distance from the pixel centre to the closest point of the segment.
        const double t = std::clamp(((y - y0) * dy + (x - x0) * dx) / len2, 0.0, 1.0);
        const double ey = y - (y0 + t * dy);
        const double ex = x - (x0 + t * dx);
        const double d2 = ey * ey + ex * ex;
        if (d2 > kStrokeReach * kStrokeReach) continue;
        const double v = std::exp(-d2 / (2 * kStrokeSigma * kStrokeSigma));
        float& p =
            data_[static_cast<size_t>(((k * o_.channels + c) * o_.height + y) * o_.width + x)];
        p = std::max(p, static_cast<float>(v));
      }
    }
  }

  const SyntheticImageOptions& o_;
  std::vector<float> data_;
};

// Fills `size` samples of one split: images uint8 [size, C, H, W], labels int64 [size].
void generate_split(const SyntheticImageOptions& o, const Prototypes& protos, int64_t seed,
                    uint64_t stream, int64_t size, torch::Tensor& images, torch::Tensor& labels) {
  images = torch::empty({size, o.channels, o.height, o.width}, torch::kUInt8);
  labels = torch::empty({size}, torch::kLong);
  uint8_t* img = images.data_ptr<uint8_t>();
  int64_t* lab = labels.data_ptr<int64_t>();
  const int64_t per_sample = o.channels * o.height * o.width;
  // Sample i depends only on (seed, stream, i): generated in parallel, identical at any thread
  // count.
  at::parallel_for(0, size, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      Rng rng(stream_state(seed, stream, static_cast<uint64_t>(i)));
      const int64_t label = rng.integer(0, o.num_classes - 1);
      const int64_t dy = rng.integer(-o.max_shift, o.max_shift);
      const int64_t dx = rng.integer(-o.max_shift, o.max_shift);
      const double contrast = rng.uniform(o.min_contrast, 1.0);
      // Distractor: any class but the label, with its own shift.
      const int64_t other = (label + rng.integer(1, o.num_classes - 1)) % o.num_classes;
      const int64_t ody = rng.integer(-o.max_shift, o.max_shift);
      const int64_t odx = rng.integer(-o.max_shift, o.max_shift);
      const double weight = rng.uniform(0.0, o.max_distractor);
      const double background = rng.uniform(0.0, kMaxBackground);

      lab[i] = label;
      uint8_t* out = img + i * per_sample;
      for (int64_t c = 0; c < o.channels; ++c) {
        for (int64_t y = 0; y < o.height; ++y) {
          for (int64_t x = 0; x < o.width; ++x) {
            const double v = background + contrast * protos.at(label, c, y - dy, x - dx) +
                             weight * protos.at(other, c, y - ody, x - odx) +
                             o.noise * rng.normal();
            *out++ = static_cast<uint8_t>(std::lround(std::clamp(v, 0.0, 1.0) * 255.0));
          }
        }
      }
    }
  });
}

}  // namespace

ImageDataset make_synthetic_images(int64_t train_size, int64_t test_size, int64_t seed,
                                   const SyntheticImageOptions& options) {
  if (train_size < 0 || test_size < 0) {
    throw InputError(
        fmt::format("synthetic images: train_size = {}, test_size = {}: sizes must be >= 0",
                    train_size, test_size));
  }
  if (options.num_classes < 2 || options.channels < 1 || options.height < 2 * kStrokeMargin ||
      options.width < 2 * kStrokeMargin || options.strokes_per_class < 1 || options.max_shift < 0 ||
      options.noise < 0) {
    throw InputError(fmt::format(
        "synthetic images: unusable options (classes {}, shape {}x{}x{}, strokes {}, shift {}, "
        "noise {}): need >= 2 classes, >= 1 channel, images of at least {}x{}, >= 1 stroke, "
        "shift >= 0, noise >= 0",
        options.num_classes, options.channels, options.height, options.width,
        options.strokes_per_class, options.max_shift, options.noise, 2 * kStrokeMargin,
        2 * kStrokeMargin));
  }

  const Prototypes protos(options, seed);
  ImageDataset ds;
  generate_split(options, protos, seed, kTrainStream, train_size, ds.train_images, ds.train_labels);
  generate_split(options, protos, seed, kTestStream, test_size, ds.test_images, ds.test_labels);
  ds.num_classes = options.num_classes;
  for (int64_t k = 0; k < options.num_classes; ++k)
    ds.class_names.push_back(fmt::format("class_{}", k));
  ds.name = "synthetic";
  ds.source = fmt::format("generated (seed {})", seed);
  compute_channel_stats(ds.train_images, ds.mean, ds.stddev);
  return ds;
}

}  // namespace batchlab::data
