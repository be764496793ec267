// One point per batch from several seeds and the bootstrap over seeds (results/seed_bootstrap.h):
// the geometric means, the bootstrap recomputed independently draw by draw, its determinism, an
// interval that covers the estimate, and no interval from one seed.
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
  EXPECT_EQ(first->resamples, kSeedResamples);
  EXPECT_EQ(first->without_b_crit, 0);
  ASSERT_TRUE(first->b_crit && first->s_min && first->e_min);
  // The same database, the same interval: every bound identical, not merely close.
  EXPECT_EQ(first->b_crit->low, second->b_crit->low);
  EXPECT_EQ(first->b_crit->high, second->b_crit->high);
  EXPECT_EQ(first->s_min->low, second->s_min->low);
  EXPECT_EQ(first->e_min->high, second->e_min->high);
  // The interval is a real spread around the estimate.
  EXPECT_LT(first->b_crit->low, *fit->b_crit);
  EXPECT_GT(first->b_crit->high, *fit->b_crit);
  EXPECT_LT(first->s_min->low, fit->s_min);
  EXPECT_GT(first->s_min->high, fit->s_min);
  EXPECT_LT(first->e_min->low, fit->e_min);
  EXPECT_GT(first->e_min->high, fit->e_min);
  // The generator seed is what fixes it: another one draws other resamples. (With 126 distinct
  // multisets of 5 seeds one bound may land on the same resample; all six do not.)
  const auto other = bootstrap_seed_fit(cells, kSeedResamples, kSeedBootstrapSeed + 1);
  ASSERT_TRUE(other && other->b_crit && other->s_min && other->e_min);
  const std::vector<double> bounds = {first->b_crit->low, first->b_crit->high, first->s_min->low,
                                      first->s_min->high, first->e_min->low,   first->e_min->high};
  const std::vector<double> other_bounds = {other->b_crit->low, other->b_crit->high,
                                            other->s_min->low,  other->s_min->high,
                                            other->e_min->low,  other->e_min->high};
  EXPECT_NE(bounds, other_bounds);
}

double type7_quantile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const double h = p * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(h);
  const double next = lo + 1 < v.size() ? v[lo + 1] : v[lo];
  return v[lo] + (h - static_cast<double>(lo)) * (next - v[lo]);
}

TEST(SeedBootstrap, MatchesAnIndependentResampling) {
  // Seeds 3, 7 and 11 at 64 and 128, seed 3 alone above. Without seed 3 a resample has only 64
  // and 128, where seed 7's steps fall faster than 1/B (S_min < 0): no critical batch.
  const std::vector<SeedSteps> cells = {
      {64, 3, 1250.0},  {64, 7, 1000.0}, {64, 11, 1020.0}, {128, 3, 640.0},  {128, 7, 400.0},
      {128, 11, 500.0}, {256, 3, 330.0}, {512, 3, 205.0},  {1024, 3, 170.0}, {2048, 3, 121.0}};
  const std::vector<int64_t> seeds = {3, 7, 11};
  std::mt19937_64 generator(kSeedBootstrapSeed);
  std::vector<double> b_crit, s_min, e_min;
  int none = 0;
  for (int r = 0; r < kSeedResamples; ++r) {
    std::vector<int64_t> drawn;
    for (int i = 0; i < 3; ++i) drawn.push_back(seeds[generator() % 3]);
    std::vector<FitPoint> points;
    for (double b : {64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0}) {
      double log_sum = 0;
      int n = 0;
      for (int64_t seed : drawn) {
        for (const auto& c : cells) {
          if (c.batch == b && c.seed == seed) log_sum += std::log(c.steps), ++n;
        }
      }
      if (n > 0) points.push_back({b, std::exp(log_sum / n), false, ""});
    }
    const auto fit = fit_scaling(points);
    if (!fit || !fit->b_crit) {
      ++none;
      continue;
    }
    b_crit.push_back(*fit->b_crit);
    s_min.push_back(fit->s_min);
    e_min.push_back(fit->e_min);
  }
  ASSERT_GT(none, 0);  // the case is exercised
  const auto got = bootstrap_seed_fit(cells);
  ASSERT_TRUE(got && got->b_crit);
  EXPECT_EQ(got->seeds, 3);
  EXPECT_EQ(got->without_b_crit, none);
  const auto near = [](double a, double b) { EXPECT_NEAR(a, b, 1e-9 * std::abs(b)); };
  near(got->b_crit->low, type7_quantile(b_crit, 0.025));
  near(got->b_crit->high, type7_quantile(b_crit, 0.975));
  near(got->s_min->low, type7_quantile(s_min, 0.025));
  near(got->s_min->high, type7_quantile(s_min, 0.975));
  near(got->e_min->low, type7_quantile(e_min, 0.025));
  near(got->e_min->high, type7_quantile(e_min, 0.975));
}

}  // namespace
}  // namespace batchlab::results
