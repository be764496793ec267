// One point per batch from several seeds and the bootstrap over seeds (results/seed_bootstrap.h):
// the geometric means, the bootstrap recomputed independently draw by draw (seeds drawn within
// each batch, every resample counted), its determinism, an interval that covers the estimate, and
// no interval while a batch has fewer than 3 seeds.
#include "results/seed_bootstrap.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <stdexcept>

namespace batchlab::results {
namespace {

TEST(SeedMeanPoints, OnePointPerBatchTheGeometricMeanOverItsSeeds) {
  // Batch 128 first, to show the points come out ascending; at 128 seed 0 has two cells (50 and
  // 200: 100 for the seed), so the point is sqrt(100 x 400) = 200, where a mean over the three
  // cells would give cbrt(50 x 200 x 400) = 158.7.
  const std::vector<SeedSteps> cells = {{128, 0, 50.0}, {128, 1, 400.0}, {128, 0, 200.0},
                                        {64, 0, 100.0}, {64, 1, 400.0},  {256, 5, 70.0}};
  const auto points = seed_mean_points(cells);
  ASSERT_EQ(points.size(), 3u);
  EXPECT_DOUBLE_EQ(points[0].batch, 64.0);
  EXPECT_NEAR(points[0].steps, 200.0, 1e-12 * 200.0);
  EXPECT_DOUBLE_EQ(points[1].batch, 128.0);
  EXPECT_NEAR(points[1].steps, 200.0, 1e-12 * 200.0);
  EXPECT_DOUBLE_EQ(points[2].batch, 256.0);
  EXPECT_NEAR(points[2].steps, 70.0, 1e-12 * 70.0);
  EXPECT_EQ(points[0].label, "batch 64");
  for (const auto& p : points) EXPECT_FALSE(p.censored);
  EXPECT_THROW(seed_mean_points({{64, 0, 0.0}}), std::invalid_argument);
  EXPECT_THROW(seed_mean_points({{0, 0, 10.0}}), std::invalid_argument);
}

TEST(SeedBootstrap, OneSeedHasNoInterval) {
  const std::vector<SeedSteps> cells = {{64, 3, 900.0}, {256, 3, 300.0}, {1024, 3, 150.0}};
  EXPECT_FALSE(bootstrap_seed_fit(cells));
  EXPECT_TRUE(fit_scaling(seed_mean_points(cells)));  // while the fit itself exists
}

TEST(SeedBootstrap, NoIntervalWhileABatchHasFewerThanThreeSeeds) {
  // Two seeds per batch: three distinct draws per batch, no 95% interval of anything.
  std::vector<SeedSteps> cells = {{64, 0, 900.0},  {64, 1, 950.0},   {256, 0, 300.0},
                                  {256, 1, 320.0}, {1024, 0, 150.0}, {1024, 1, 140.0}};
  EXPECT_FALSE(bootstrap_seed_fit(cells));
  // A third seed at two of the three batches is not enough either.
  cells.push_back({64, 2, 920.0});
  cells.push_back({256, 2, 310.0});
  EXPECT_FALSE(bootstrap_seed_fit(cells));
  cells.push_back({1024, 2, 145.0});
  const auto boot = bootstrap_seed_fit(cells);
  ASSERT_TRUE(boot);
  EXPECT_EQ(boot->min_batch_seeds, 3);
}

// Five seeds at every batch of S = 400 + 409600/B (B_crit = 1024), each off by a few percent.
std::vector<SeedSteps> five_seed_curve() {
  std::mt19937 rng(7);
  std::normal_distribution<double> log_noise(0.0, 0.05);
  std::vector<SeedSteps> cells;
  for (double b = 64; b <= 16384; b *= 2) {
    for (int64_t seed = 0; seed < 5; ++seed) {
      cells.push_back({b, seed, (400.0 + 409600.0 / b) * std::exp(log_noise(rng))});
    }
  }
  return cells;
}

TEST(SeedBootstrap, IsDeterministicAndCoversTheEstimate) {
  const auto cells = five_seed_curve();
  const auto fit = fit_scaling(seed_mean_points(cells));
  ASSERT_TRUE(fit && fit->b_crit);
  const auto first = bootstrap_seed_fit(cells);
  const auto second = bootstrap_seed_fit(cells);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->seeds, 5);
  EXPECT_EQ(first->min_batch_seeds, 5);
  EXPECT_EQ(first->resamples, kSeedResamples);
  EXPECT_EQ(first->without_b_crit, 0);
  // The same database, the same interval: every bound identical, not merely close.
  EXPECT_EQ(first->b_crit.low, second->b_crit.low);
  EXPECT_EQ(first->b_crit.high, second->b_crit.high);
  EXPECT_EQ(first->s_min.low, second->s_min.low);
  EXPECT_EQ(first->e_min.high, second->e_min.high);
  // The interval is a real spread around the estimate.
  EXPECT_LT(first->b_crit.low, *fit->b_crit);
  EXPECT_GT(first->b_crit.high, *fit->b_crit);
  EXPECT_LT(first->s_min.low, fit->s_min);
  EXPECT_GT(first->s_min.high, fit->s_min);
  EXPECT_LT(first->e_min.low, fit->e_min);
  EXPECT_GT(first->e_min.high, fit->e_min);
  ASSERT_EQ(first->band.size(), static_cast<size_t>(kBandPoints));
  // The generator seed is what fixes it: another one draws other resamples.
  const auto other = bootstrap_seed_fit(cells, kSeedResamples, kSeedBootstrapSeed + 1);
  ASSERT_TRUE(other);
  const std::vector<double> bounds = {first->b_crit.low, first->b_crit.high, first->s_min.low,
                                      first->s_min.high, first->e_min.low,   first->e_min.high};
  const std::vector<double> other_bounds = {other->b_crit.low, other->b_crit.high,
                                            other->s_min.low,  other->s_min.high,
                                            other->e_min.low,  other->e_min.high};
  EXPECT_NE(bounds, other_bounds);
}

double type7_quantile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const double h = p * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(h);
  const double next = lo + 1 < v.size() ? v[lo + 1] : v[lo];
  return v[lo] + (h - static_cast<double>(lo)) * (next - v[lo]);
}

// Three seeds at three batches whose steps fall about as 1/B: S_min is near 0, and a good share of
// the resamples put it below (no critical batch: B_crit unbounded).
const std::vector<SeedSteps> kNearZeroFloor = {{64, 3, 1000.0}, {64, 7, 1100.0}, {64, 11, 950.0},
                                               {128, 3, 520.0}, {128, 7, 560.0}, {128, 11, 480.0},
                                               {256, 3, 270.0}, {256, 7, 300.0}, {256, 11, 250.0}};

TEST(SeedBootstrap, MatchesAnIndependentResamplingWithinBatches) {
  std::mt19937_64 generator(kSeedBootstrapSeed);
  std::vector<double> b_crit, s_min, e_min;
  int unbounded = 0;
  for (int r = 0; r < kSeedResamples; ++r) {
    std::vector<FitPoint> points;
    for (double b : {64.0, 128.0, 256.0}) {
      std::vector<double> logs;  // the batch's seeds, ascending (3, 7, 11), cells in that order
      for (const auto& c : kNearZeroFloor) {
        if (c.batch == b) logs.push_back(std::log(c.steps));
      }
      const double mean = (logs[0] + logs[1] + logs[2]) / 3.0;
      double sum = 0.0;
      for (int i = 0; i < 3; ++i) {
        // sqrt(n / (n - 1)) and t / z at 3 x (3 - 1) degrees of freedom.
        sum += mean + std::sqrt(1.5) * student_over_normal(6.0) * (logs[generator() % 3] - mean);
      }
      points.push_back({b, std::exp(sum / 3.0), false, ""});
    }
    const auto fit = fit_scaling(points);
    ASSERT_TRUE(fit);
    ASSERT_GT(fit->e_min, 0.0);
    if (!fit->b_crit) ++unbounded;
    b_crit.push_back(fit->b_crit ? *fit->b_crit : 1e300);  // ranked above every finite one
    s_min.push_back(fit->s_min);
    e_min.push_back(fit->e_min);
  }
  // More than 2.5% unbounded, and enough bounded for a finite lower end: the case is exercised.
  ASSERT_GT(unbounded, kSeedResamples / 40);
  ASSERT_LT(unbounded, kSeedResamples / 2);
  const auto got = bootstrap_seed_fit(kNearZeroFloor);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->seeds, 3);
  EXPECT_EQ(got->resamples, kSeedResamples);
  EXPECT_EQ(got->without_b_crit, unbounded);
  EXPECT_EQ(got->unbounded, unbounded);
  const auto near = [](double a, double b) { EXPECT_NEAR(a, b, 1e-9 * std::abs(b)); };
  // Every resample counts: the unbounded ones make the upper end unbounded, not dropped.
  near(got->b_crit.low, type7_quantile(b_crit, 0.025));
  EXPECT_TRUE(std::isinf(got->b_crit.high));
  near(got->s_min.low, type7_quantile(s_min, 0.025));
  near(got->s_min.high, type7_quantile(s_min, 0.975));
  near(got->e_min.low, type7_quantile(e_min, 0.025));
  near(got->e_min.high, type7_quantile(e_min, 0.975));
}

TEST(SeedBootstrap, WidensByStudentsTOverTheNormal) {
  // t's 97.5% quantiles from a table, over 1.959964.
  EXPECT_NEAR(student_over_normal(3.0), 3.182446 / 1.959964, 0.01 * 3.182446 / 1.959964);
  EXPECT_NEAR(student_over_normal(6.0), 2.446912 / 1.959964, 0.001 * 2.446912 / 1.959964);
  EXPECT_NEAR(student_over_normal(10.0), 2.228139 / 1.959964, 0.0005);
  EXPECT_NEAR(student_over_normal(32.0), 2.036933 / 1.959964, 0.0005);
}

TEST(SeedBootstrap, RanksACurveWithoutBCrit) {
  ScalingFit fit;
  fit.s_min = -10.0;
  fit.e_min = 5000.0;
  EXPECT_TRUE(std::isinf(ranked_b_crit(fit)));  // no floor: unbounded
  fit.e_min = -1.0;
  EXPECT_EQ(ranked_b_crit(fit), 0.0);  // no gain from batch
  fit.b_crit = 300.0;
  EXPECT_EQ(ranked_b_crit(fit), 300.0);
}

}  // namespace
}  // namespace batchlab::results
