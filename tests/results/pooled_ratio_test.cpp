// The pooled ratio over batches (results/pooled_ratio.h): the estimate is the geometric mean of the
// per-batch ratios, no interval below 3 seeds a side, an interval and p-value that agree (p < 0.05
// exactly when the interval excludes 1), the same numbers on every run, and the interval's coverage
// on simulated seeds with a known ratio.
#include "results/pooled_ratio.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

namespace batchlab::results {
namespace {

std::vector<double> logs(std::initializer_list<double> steps) {
  std::vector<double> out;
  for (double s : steps) out.push_back(std::log(s));
  return out;
}

TEST(PooledRatio, IsTheGeometricMeanOfThePerBatchRatios) {
  // Batch 16: A/B = 100/200 (geometric means); batch 32: 90/100.
  const std::vector<BatchLogSteps> batches = {{16, logs({100, 100, 100}), logs({200, 200, 200})},
                                              {32, logs({90, 90, 90}), logs({100, 100, 100})}};
  const auto r = pooled_ratio(batches);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->batches, 2);
  EXPECT_NEAR(r->ratio, std::sqrt(0.5 * 0.9), 1e-12);
  ASSERT_TRUE(r->interval);  // no spread: every resample gives the ratio itself
  EXPECT_NEAR(r->interval->low, r->ratio, 1e-12);
  EXPECT_NEAR(*r->p, 0.0, 1e-12);
}

TEST(PooledRatio, FewerThanThreeSeedsASideGiveTheRatioWithoutAnInterval) {
  const auto r = pooled_ratio({{16, logs({100, 110}), logs({200, 190, 210})}});
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->interval);
  EXPECT_FALSE(r->p);
  EXPECT_FALSE(pooled_ratio({}));
  EXPECT_THROW(pooled_ratio({{16, {}, logs({1, 2, 3})}}), std::invalid_argument);
}

TEST(PooledRatio, ItsPValueIsBelowFivePercentExactlyWhenTheIntervalExcludesOne) {
  std::mt19937_64 generator(11);
  std::normal_distribution<double> noise(0.0, 0.2);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<BatchLogSteps> batches;
    const double shift = 0.1 * (trial % 5) - 0.2;
    for (double batch : {16.0, 32.0, 64.0}) {
      BatchLogSteps b{batch, {}, {}};
      for (int s = 0; s < 3; ++s) b.a.push_back(5.0 + shift + noise(generator));
      for (int s = 0; s < 3; ++s) b.b.push_back(5.0 + noise(generator));
      batches.push_back(b);
    }
    const auto r = pooled_ratio(batches, 2000, 100 + static_cast<uint64_t>(trial));
    const bool excludes = r->interval->low > 1.0 || r->interval->high < 1.0;
    // The percentile interval interpolates between order statistics; p counts them: they may
    // disagree only for a p within one resample of 0.05.
    if (std::abs(*r->p - 0.05) > 2.0 / 2000) {
      EXPECT_EQ(excludes, *r->p < 0.05) << *r->p;
    }
  }
  const std::vector<BatchLogSteps> same = {{16, logs({100, 120, 90}), logs({105, 95, 115})}};
  const auto a = pooled_ratio(same), b = pooled_ratio(same);
  EXPECT_EQ(a->interval->low, b->interval->low);  // a fixed generator seed
  EXPECT_EQ(*a->p, *b->p);
}

// 3 seeds a side at 6 batches, log-normal seed noise of 0.15, a true ratio of 0.8: the 95%
// interval should hold it in about 95% of simulated studies.
TEST(PooledRatio, ItsIntervalCoversTheTrueRatioOnSimulatedSeeds) {
  std::mt19937_64 generator(5);
  std::normal_distribution<double> noise(0.0, 0.15);
  const int studies = 400;
  int covered = 0;
  for (int i = 0; i < studies; ++i) {
    std::vector<BatchLogSteps> batches;
    for (double batch : {16.0, 32.0, 64.0, 128.0, 256.0, 512.0}) {
      const double log_steps = std::log(100.0 + 6400.0 / batch);
      BatchLogSteps b{batch, {}, {}};
      for (int s = 0; s < 3; ++s) b.a.push_back(log_steps + std::log(0.8) + noise(generator));
      for (int s = 0; s < 3; ++s) b.b.push_back(log_steps + noise(generator));
      batches.push_back(b);
    }
    const auto r = pooled_ratio(batches, 2000, 1000 + static_cast<uint64_t>(i));
    covered += r->interval->low <= 0.8 && 0.8 <= r->interval->high;
  }
  const double coverage = covered / static_cast<double>(studies);
  // 95% nominal; 400 studies give a standard error of about 1.1 points.
  EXPECT_GT(coverage, 0.91) << coverage;
  EXPECT_LT(coverage, 0.99) << coverage;
}

}  // namespace
}  // namespace batchlab::results
