#include "serve/downsample.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace batchlab::serve {
namespace {

std::vector<double> noisy_decay(std::size_t n) {
  std::vector<double> y(n);
  for (std::size_t i = 0; i < n; ++i) {
    y[i] = 2.0 * std::exp(-static_cast<double>(i) / 2e5) + 0.01 * std::sin(static_cast<double>(i));
  }
  return y;
}

TEST(Downsample, ShortSeriesAreReturnedWhole) {
  const std::vector<double> y = {3, 1, 2};
  EXPECT_EQ(downsample_indices(y, 10), (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_TRUE(downsample_indices({}, 10).empty());
}

TEST(Downsample, AMillionPointsBecomeAtMostTheBoundAndKeepTheSpike) {
  std::vector<double> y = noisy_decay(1'000'000);
  y[123'457] = 80.0;  // a loss spike one step long, as a diverging large-batch run shows
  y[876'543] = -5.0;  // and a single low outlier
  const auto keep = downsample_indices(y, 1000);
  EXPECT_LE(keep.size(), 1000u);
  EXPECT_GE(keep.size(), 600u);  // 200 buckets of first/min/max/last, minus coincidences
  EXPECT_TRUE(std::is_sorted(keep.begin(), keep.end()));
  EXPECT_EQ(std::adjacent_find(keep.begin(), keep.end()), keep.end()) << "no index twice";
  EXPECT_EQ(keep.front(), 0u);
  EXPECT_EQ(keep.back(), y.size() - 1);
  EXPECT_TRUE(std::binary_search(keep.begin(), keep.end(), 123'457u)) << "the spike survives";
  EXPECT_TRUE(std::binary_search(keep.begin(), keep.end(), 876'543u)) << "the dip survives";
}

TEST(Downsample, EveryBucketKeepsItsOwnExtremes) {
  // Stride sampling would keep only multiples of the stride; here each bucket's max must be in.
  std::vector<double> y(10'000, 0.0);
  for (std::size_t b = 0; b < 100; ++b) y[b * 100 + 37] = 1.0 + static_cast<double>(b);
  const auto keep = downsample_indices(y, 500);  // 100 buckets of 100 points
  for (std::size_t b = 0; b < 100; ++b) {
    EXPECT_TRUE(std::binary_search(keep.begin(), keep.end(), b * 100 + 37)) << "bucket " << b;
  }
}

TEST(Downsample, AGapStaysAGap) {
  std::vector<double> y = noisy_decay(100'000);
  y[50'001] = std::numeric_limits<double>::quiet_NaN();  // a non-finite loss (NULL in SQLite)
  const auto keep = downsample_indices(y, 100);
  EXPECT_LE(keep.size(), 100u);
  EXPECT_TRUE(std::binary_search(keep.begin(), keep.end(), 50'001u));
}

TEST(Downsample, AllGapsStillRespectTheBound) {
  std::vector<double> y(10'000);
  for (std::size_t i = 0; i < y.size(); ++i) {
    y[i] = i % 7 == 3 ? std::numeric_limits<double>::quiet_NaN() : static_cast<double>(i % 13);
  }
  EXPECT_LE(downsample_indices(y, 50).size(), 50u);
}

}  // namespace
}  // namespace batchlab::serve
