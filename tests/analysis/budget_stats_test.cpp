// The statistics of a fixed-budget comparison (analysis/budget_stats.h): seed intervals, Welch
// differences, Holm over the batches (checked by simulation: comparisons with no true difference
// print a verdict in at most about 5%), and the trend's bootstrap.
#include "analysis/budget_stats.h"

#include <gtest/gtest.h>

#include <random>

namespace batchlab::analysis {
namespace budget_stats_test {

TEST(BudgetStats, ASeedIntervalIsCalled95OnlyFromThreeSeeds) {
  EXPECT_FALSE(seed_interval({}));
  const auto one = seed_interval({2.0});
  ASSERT_TRUE(one);
  EXPECT_FALSE(one->low);
  const auto two = seed_interval({2.0, 3.0});
  EXPECT_FALSE(two->is_95);
  EXPECT_DOUBLE_EQ(*two->low, 2.0);
  EXPECT_DOUBLE_EQ(*two->high, 3.0);
  // 1, 2, 3: mean 2, sd 1, t(0.975, 2) = 4.303: 2 +- 4.303 / sqrt(3).
  const auto three = seed_interval({1.0, 2.0, 3.0});
  EXPECT_TRUE(three->is_95);
  EXPECT_NEAR(*three->low, 2.0 - 4.302653 / std::sqrt(3.0), 1e-5);
  EXPECT_NEAR(*three->high, 2.0 + 4.302653 / std::sqrt(3.0), 1e-5);
}

TEST(BudgetStats, WelchDifferenceMatchesTheTextbook) {
  // Equal variances and sizes: Welch's dof is 2(n - 1) = 4; t(0.975, 4) = 2.776.
  const auto d = welch_difference({4.0, 5.0, 6.0}, {1.0, 2.0, 3.0});
  ASSERT_TRUE(d);
  EXPECT_DOUBLE_EQ(d->estimate, 3.0);
  const double se = std::sqrt(2.0 / 3.0);
  EXPECT_NEAR(d->high - d->estimate, 2.776445 * se, 1e-4);
  EXPECT_NEAR(d->p, 0.02131, 2e-4);  // t = 3.674 on 4 dof
  EXPECT_EQ(d->min_seeds, 3u);
  EXPECT_FALSE(welch_difference({1.0}, {1.0, 2.0}));
}

TEST(BudgetStats, HolmStepsDownAndLeavesOutSidesWithFewerThanThreeSeeds) {
  Difference a, b, c, small;
  a.p = 0.01;
  b.p = 0.04;
  c.p = 0.03;
  a.min_seeds = b.min_seeds = c.min_seeds = 3;
  small.p = 0.0001;
  small.min_seeds = 2;
  // m = 3: 0.01 <= 0.05/3 rejects; 0.03 > 0.05/2 stops there.
  holm({&a, &b, &c, &small}, 0.05);
  EXPECT_TRUE(a.holm_rejects);
  EXPECT_FALSE(c.holm_rejects);
  EXPECT_FALSE(b.holm_rejects);
  EXPECT_FALSE(small.holm_rejects);
}

// 6 batches, 3 seeds a side, no true difference: Holm keeps the chance of any verdict at or below
// 5%; the per-batch rule alone prints one in about 1 - 0.95^6 = 26%.
TEST(BudgetStats, ComparisonsWithNoTrueDifferenceRarelyPrintAVerdict) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0.0, 0.05);
  const int kComparisons = 2000;
  int with_verdict = 0, unadjusted = 0;
  for (int i = 0; i < kComparisons; ++i) {
    std::vector<Difference> ds;
    for (int batch = 0; batch < 6; ++batch) {
      std::vector<double> a, b;
      for (int s = 0; s < 3; ++s) {
        a.push_back(5.0 + noise(rng));
        b.push_back(5.0 + noise(rng));
      }
      ds.push_back(*welch_difference(a, b));
    }
    std::vector<FamilyTest*> family;
    bool any_raw = false;
    for (auto& d : ds) {
      family.push_back(&d);
      any_raw = any_raw || d.p <= 0.05;
    }
    holm(family, 0.05);
    bool any = false;
    for (const auto& d : ds) any = any || d.holm_rejects;
    with_verdict += any ? 1 : 0;
    unadjusted += any_raw ? 1 : 0;
  }
  const double rate = static_cast<double>(with_verdict) / kComparisons;
  // 5% plus three binomial standard errors at n = 2000 (0.49% each).
  EXPECT_LE(rate, 0.065) << rate;
  EXPECT_GT(static_cast<double>(unadjusted) / kComparisons, 0.15);
}

TEST(BudgetStats, TheTrendIsTheSlopePerDoublingWithAnIntervalOverSeeds) {
  // Loss rises 0.1 a doubling, seeds spread +-0.01.
  SeedsByBatch data;
  for (int k = 0; k < 6; ++k) {
    const double base = 5.0 + 0.1 * k;
    data[int64_t{16} << k] = {base - 0.01, base, base + 0.01};
  }
  const auto s = bootstrap_slope(data);
  ASSERT_TRUE(s);
  EXPECT_NEAR(s->per_doubling, 0.1, 1e-12);
  EXPECT_LT(s->low, 0.1);
  EXPECT_GT(s->high, 0.1);
  EXPECT_GT(s->low, 0.09);
  EXPECT_EQ(s->batches, 6u);
  EXPECT_EQ(s->min_seeds, 3u);
  // Another series flat: the difference is 0.1 a doubling, clear of 0.
  SeedsByBatch flat;
  for (const auto& [batch, values] : data) flat[batch] = {5.0, 5.01, 4.99};
  const auto d = bootstrap_slope_difference(data, flat);
  ASSERT_TRUE(d);
  EXPECT_NEAR(d->per_doubling, 0.1, 1e-12);
  EXPECT_GT(d->low, 0.0);
  // Every resample on one side of 0: the bootstrap p is its floor, 2 / 4001, never 0.
  EXPECT_NEAR(d->p, 2.0 / 4001.0, 1e-12);
  // Against itself the difference resamples around 0: no evidence either way.
  EXPECT_GT(bootstrap_slope_difference(flat, flat)->p, 0.3);
  // One batch: no trend.
  EXPECT_FALSE(bootstrap_slope({{16, {1.0, 2.0}}}));
}

}  // namespace budget_stats_test
}  // namespace batchlab::analysis
