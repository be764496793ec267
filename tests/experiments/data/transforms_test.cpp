#include "experiments/data/transforms.h"

#include <gtest/gtest.h>

#include <cmath>

namespace batchlab::data {
namespace {

TEST(Transforms, RandomResizedCropStaysWithinItsLimitsOverManySeeds) {
  // ImageNet-like and unusual sizes, 2,000 seeds each. For the 5:1 image some draws exhaust the 10
  // attempts; the fallback (the full height at ratio 4/3, 27% of the area) is within limits too.
  const std::vector<std::pair<int64_t, int64_t>> sizes = {
      {500, 375}, {375, 500}, {224, 224}, {1000, 200}, {64, 48}};
  for (const auto& [w, h] : sizes) {
    for (uint64_t seed = 0; seed < 2000; ++seed) {
      SampleRng rng(seed * 7919 + 1);
      const CropBox b = random_resized_crop(w, h, 0.08, rng);
      // Inside the image, on whole pixels.
      ASSERT_GE(b.x, 0);
      ASSERT_GE(b.y, 0);
      ASSERT_LE(b.x + b.width, w);
      ASSERT_LE(b.y + b.height, h);
      ASSERT_EQ(b.x, std::floor(b.x));
      ASSERT_EQ(b.y, std::floor(b.y));
      ASSERT_EQ(b.width, std::floor(b.width));
      ASSERT_GT(b.width, 0);
      ASSERT_GT(b.height, 0);
      // The area fraction, up to rounding each side to whole pixels (half a pixel per side).
      const double area = b.width * b.height / static_cast<double>(w * h);
      const double slack = 0.6 * (b.width + b.height + 1.0) / static_cast<double>(w * h);
      ASSERT_GE(area, 0.08 - slack) << w << "x" << h << " seed " << seed;
      ASSERT_LE(area, 1.0);
      // The aspect ratio within [3/4, 4/3], up to the same rounding.
      const double ratio = b.width / b.height;
      const double tol = 0.6 / b.width + 0.6 / b.height;
      ASSERT_GE(ratio, kMinAspect * (1 - tol)) << b.width << "x" << b.height;
      ASSERT_LE(ratio, kMaxAspect * (1 + tol)) << b.width << "x" << b.height;
    }
  }
}

TEST(Transforms, RandomResizedCropCoversTheScaleRange) {
  double lo = 1, hi = 0;
  for (uint64_t seed = 0; seed < 3000; ++seed) {
    SampleRng rng(seed);
    const CropBox b = random_resized_crop(500, 375, 0.08, rng);
    const double area = b.width * b.height / (500.0 * 375.0);
    lo = std::min(lo, area);
    hi = std::max(hi, area);
  }
  EXPECT_LT(lo, 0.1);
  EXPECT_GT(hi, 0.9);
  // A larger min_scale is respected.
  for (uint64_t seed = 0; seed < 500; ++seed) {
    SampleRng rng(seed);
    const CropBox b = random_resized_crop(500, 375, 0.5, rng);
    EXPECT_GE(b.width * b.height / (500.0 * 375.0), 0.5 - 0.01);
  }
}

TEST(Transforms, ElongatedImagesFallBackToACenteredCropAtTheNearestRatio) {
  // 10:1 - no 3/4..4/3 crop with at least 8% of the area fits the 100-pixel height.
  SampleRng rng(3);
  const CropBox b = random_resized_crop(1000, 100, 0.08, rng);
  EXPECT_EQ(b.height, 100);
  EXPECT_EQ(b.width, 133);  // round(100 * 4/3)
  EXPECT_EQ(b.x, (1000 - 133) / 2);
  EXPECT_EQ(b.y, 0);
  SampleRng rng2(3);
  const CropBox t = random_resized_crop(100, 1000, 0.08, rng2);
  EXPECT_EQ(t.width, 100);
  EXPECT_EQ(t.height, 133);  // round(100 / (3/4))
}

TEST(Transforms, FlipIsAFairCoinAndTransformsAreAPureFunctionOfTheSeed) {
  TransformSpec spec;
  int flips = 0;
  for (uint64_t seed = 0; seed < 4000; ++seed) {
    const SampleTransform a = random_transform(500, 375, spec, seed);
    const SampleTransform b = random_transform(500, 375, spec, seed);
    ASSERT_EQ(a.flip, b.flip);
    ASSERT_EQ(a.box.x, b.box.x);
    ASSERT_EQ(a.box.width, b.box.width);
    flips += a.flip;
  }
  EXPECT_NEAR(flips / 4000.0, 0.5, 0.04);
  // Neighbouring positions of one batch get different draws.
  EXPECT_NE(sample_seed(42, 0), sample_seed(42, 1));
  EXPECT_NE(sample_seed(42, 0), sample_seed(43, 0));
}

TEST(Transforms, EvalBoxIsTheCenterOfTheResizedImage) {
  // 500 x 375 -> shorter side 256 (scale 256/375), center 224 square = 328.125 source pixels.
  const CropBox b = center_crop_box(500, 375, 256, 224);
  EXPECT_DOUBLE_EQ(b.width, 375.0 * 224.0 / 256.0);
  EXPECT_DOUBLE_EQ(b.height, b.width);
  EXPECT_DOUBLE_EQ(b.x, (500 - b.width) / 2);
  EXPECT_DOUBLE_EQ(b.y, (375 - b.height) / 2);
  const SampleTransform t = eval_transform(300, 600, TransformSpec{});
  EXPECT_FALSE(t.flip);
  EXPECT_DOUBLE_EQ(t.box.width, 300.0 * 224.0 / 256.0);
  EXPECT_DOUBLE_EQ(t.box.y, (600 - t.box.height) / 2);
}

TEST(Transforms, SampleRngIsUniformAndReproducible) {
  SampleRng a(99), b(99);
  double sum = 0;
  int64_t lo_hits = 0, hi_hits = 0;
  for (int i = 0; i < 20000; ++i) {
    const double u = a.uniform();
    ASSERT_EQ(u, b.uniform());
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    const int64_t k = a.integer(3, 5);
    b.integer(3, 5);
    ASSERT_GE(k, 3);
    ASSERT_LE(k, 5);
    lo_hits += k == 3;
    hi_hits += k == 5;
  }
  EXPECT_NEAR(sum / 20000, 0.5, 0.01);
  EXPECT_NEAR(lo_hits / 20000.0, 1 / 3.0, 0.02);
  EXPECT_NEAR(hi_hits / 20000.0, 1 / 3.0, 0.02);
}

}  // namespace
}  // namespace batchlab::data
