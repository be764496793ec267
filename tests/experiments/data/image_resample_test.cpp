#include "experiments/data/image_resample.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <tuple>

#include "tests/experiments/data/image_test_util.h"

namespace batchlab::data {
namespace {

using testing::ramp_image;

ImageView view_of(const std::vector<uint8_t>& rgb, int64_t w, int64_t h) {
  return {rgb.data(), w, h, w * 3};
}

TEST(ImageResample, SameSizeWholeImageIsTheIdentityInBothLayouts) {
  const int64_t w = 37, h = 23;
  const auto rgb = ramp_image(w, h, 77);
  ResampleScratch scratch;
  std::vector<uint8_t> hwc(rgb.size()), chw(rgb.size());
  const CropBox whole{0, 0, static_cast<double>(w), static_cast<double>(h)};
  resample_crop(view_of(rgb, w, h), whole, w, h, false, PixelLayout::hwc, hwc.data(), scratch);
  EXPECT_EQ(hwc, rgb);
  resample_crop(view_of(rgb, w, h), whole, w, h, false, PixelLayout::chw, chw.data(), scratch);
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      for (int64_t c = 0; c < 3; ++c) {
        ASSERT_EQ(chw[(c * h + y) * w + x], rgb[(y * w + x) * 3 + c]) << x << "," << y << "," << c;
      }
    }
  }
}

TEST(ImageResample, CropOfAnIntegerBoxAtItsOwnSizeCopiesThatRegion) {
  const int64_t w = 40, h = 30;
  const auto rgb = ramp_image(w, h, 5);
  ResampleScratch scratch;
  std::vector<uint8_t> out(12 * 10 * 3);
  resample_crop(view_of(rgb, w, h), {7, 4, 12, 10}, 12, 10, false, PixelLayout::hwc, out.data(),
                scratch);
  for (int64_t y = 0; y < 10; ++y) {
    for (int64_t x = 0; x < 12; ++x) {
      for (int64_t c = 0; c < 3; ++c) {
        ASSERT_EQ(out[(y * 12 + x) * 3 + c], rgb[((y + 4) * w + x + 7) * 3 + c]);
      }
    }
  }
}

TEST(ImageResample, FlipMirrorsEachRow) {
  const int64_t w = 50, h = 20, s = 16;
  const auto rgb = ramp_image(w, h, 100);
  ResampleScratch scratch;
  std::vector<uint8_t> plain(3 * s * s), flipped(3 * s * s);
  const CropBox box{3.5, 2.25, 30.0, 15.0};
  resample_crop(view_of(rgb, w, h), box, s, s, false, PixelLayout::chw, plain.data(), scratch);
  resample_crop(view_of(rgb, w, h), box, s, s, true, PixelLayout::chw, flipped.data(), scratch);
  for (int64_t c = 0; c < 3; ++c) {
    for (int64_t y = 0; y < s; ++y) {
      for (int64_t x = 0; x < s; ++x) {
        ASSERT_EQ(flipped[(c * s + y) * s + x], plain[(c * s + y) * s + (s - 1 - x)]);
      }
    }
  }
  // The red ramp runs left to right, so flipped red runs right to left.
  EXPECT_LT(plain[0], plain[s - 1]);
  EXPECT_GT(flipped[0], flipped[s - 1]);
}

TEST(ImageResample, ConstantImagesStayConstantAtAnyScale) {
  const int64_t w = 97, h = 61;
  std::vector<uint8_t> rgb(static_cast<size_t>(w * h * 3));
  for (size_t i = 0; i < rgb.size(); ++i)
    rgb[i] = static_cast<uint8_t>(i % 3 == 0 ? 17 : i % 3 == 1 ? 128 : 250);
  ResampleScratch scratch;
  for (int64_t out : {5, 24, 61, 150}) {
    std::vector<uint8_t> o(static_cast<size_t>(3 * out * out));
    resample_crop(view_of(rgb, w, h), {1.3, 2.7, 80.1, 50.9}, out, out, false, PixelLayout::chw,
                  o.data(), scratch);
    for (int64_t i = 0; i < out * out; ++i) {
      ASSERT_EQ(o[i], 17);
      ASSERT_EQ(o[out * out + i], 128);
      ASSERT_EQ(o[2 * out * out + i], 250);
    }
  }
}

TEST(ImageResample, ReductionAveragesInsteadOfAliasing) {
  // A one-pixel checkerboard halved: plain 2-tap sampling at pixel centers would pick one phase
  // (all black or all white); the widened triangle filter gives mid grey.
  const int64_t w = 64, h = 64;
  std::vector<uint8_t> rgb(static_cast<size_t>(w * h * 3));
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t c = 0; c < 3; ++c) rgb[(y * w + x) * 3 + c] = ((x + y) % 2) ? 255 : 0;
  ResampleScratch scratch;
  std::vector<uint8_t> o(3 * 32 * 32);
  resample_crop(view_of(rgb, w, h), {0, 0, 64, 64}, 32, 32, false, PixelLayout::chw, o.data(),
                scratch);
  for (int64_t i = 0; i < 32 * 32; ++i) ASSERT_NEAR(o[i], 128, 16) << i;
}

TEST(ImageResample, EnlargingInterpolatesLinearly) {
  // A 2-pixel row (0, 200) enlarged to 4: centers at source x = 0.25, 0.75, 1.25, 1.75 -> the
  // clamped linear interpolation gives 0, 50, 150, 200.
  std::vector<uint8_t> rgb = {0, 0, 0, 200, 200, 200};
  ResampleScratch scratch;
  std::vector<uint8_t> o(3 * 4);
  resample_crop(view_of(rgb, 2, 1), {0, 0, 2, 1}, 4, 1, false, PixelLayout::hwc, o.data(), scratch);
  EXPECT_EQ(o[0], 0);
  EXPECT_EQ(o[3], 50);
  EXPECT_EQ(o[6], 150);
  EXPECT_EQ(o[9], 200);
}

// The separable triangle filter evaluated directly in double precision.
std::vector<double> reference_crop(const std::vector<uint8_t>& rgb, int64_t w, int64_t h,
                                   const CropBox& box, int64_t ow, int64_t oh) {
  auto axis = [](double offset, double length, int64_t count, int64_t limit, int64_t i) {
    const double scale = length / count, support = std::max(1.0, scale);
    const double center = offset + (i + 0.5) * scale;
    std::vector<double> wts(static_cast<size_t>(limit), 0.0);
    double sum = 0;
    for (int64_t p = 0; p < limit; ++p) {
      wts[p] = std::max(0.0, 1.0 - std::abs((p + 0.5 - center) / support));
      sum += wts[p];
    }
    for (auto& v : wts) v /= sum;
    return wts;
  };
  std::vector<double> out(static_cast<size_t>(3 * ow * oh));
  for (int64_t y = 0; y < oh; ++y) {
    const auto wy = axis(box.y, box.height, oh, h, y);
    for (int64_t x = 0; x < ow; ++x) {
      const auto wx = axis(box.x, box.width, ow, w, x);
      for (int64_t c = 0; c < 3; ++c) {
        double acc = 0;
        for (int64_t sy = 0; sy < h; ++sy) {
          if (wy[sy] == 0) continue;
          for (int64_t sx = 0; sx < w; ++sx) acc += wy[sy] * wx[sx] * rgb[(sy * w + sx) * 3 + c];
        }
        out[(c * oh + y) * ow + x] = acc;
      }
    }
  }
  return out;
}

TEST(ImageResample, MatchesTheTriangleFilterComputedDirectly) {
  // A textured image (not smooth) at reductions of 1.3x to 3.5x and an enlargement, odd sizes.
  const int64_t w = 53, h = 41;
  std::vector<uint8_t> rgb(static_cast<size_t>(w * h * 3));
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<uint8_t>((i * 7919u) % 251u);
  ResampleScratch scratch;
  const std::vector<std::tuple<CropBox, int64_t, int64_t>> cases = {
      {{3, 2, 40, 30}, 31, 23}, {{0, 0, 53, 41}, 15, 12}, {{10.5, 7.25, 20, 14}, 33, 25}};
  for (const auto& [box, ow, oh] : cases) {
    std::vector<uint8_t> out(static_cast<size_t>(3 * ow * oh));
    resample_crop(view_of(rgb, w, h), box, ow, oh, false, PixelLayout::chw, out.data(), scratch);
    const auto want = reference_crop(rgb, w, h, box, ow, oh);
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_LE(std::abs(out[i] - want[i]), 0.51 + 1e-3)
          << "output " << i << " of " << ow << "x" << oh;
    }
  }
}

TEST(ImageResample, FilterWeightsSumToOneAndStayInsideTheImage) {
  ResampleFilter f;
  for (double len : {3.0, 17.5, 100.0, 333.3}) {
    build_resample_filter(2.0, len, 50, 400, f);
    for (int64_t i = 0; i < 50; ++i) {
      double sum = 0;
      for (int64_t k = 0; k < f.taps; ++k) sum += f.weights[i * f.taps + k];
      EXPECT_NEAR(sum, 1.0, 1e-5);
      EXPECT_GE(f.start[i], 0);
      EXPECT_LE(f.start[i] + f.taps, 400);
    }
  }
}

}  // namespace
}  // namespace batchlab::data
