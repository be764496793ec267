// results/critical_batch.h: the 20%-over-linear-scaling batch from the fit (its closed form against
// a numerical solve of S(B) B = 1.2 S(B_ref) B_ref) and from measured steps (interpolated in log
// samples against log batch, none when no batch exceeds 1.2x), and their seed intervals.
#include "results/critical_batch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace batchlab::results {
namespace {

std::vector<FitPoint> points_of(const std::vector<std::pair<double, double>>& batch_steps) {
  std::vector<FitPoint> out;
  for (const auto& [batch, steps] : batch_steps) out.push_back({batch, steps, false, ""});
  return out;
}

TEST(CriticalBatch, TheFitsExcessBatchSolvesTwentyPercentOverLinearScaling) {
  ScalingFit fit;
  fit.s_min = 100.0;
  fit.e_min = 8000.0;  // B_crit 80
  const double b = fit_excess_batch(fit, 16.0);
  EXPECT_DOUBLE_EQ(b, 1.2 * 16.0 + 0.2 * 80.0);
  // S(B) B = 1.2 S(16) 16 at that batch.
  EXPECT_NEAR(fitted_steps(fit, b) * b, 1.2 * fitted_steps(fit, 16.0) * 16.0, 1e-9);
  fit.s_min = -5.0;  // no floor: linear scaling never breaks down within the curve
  EXPECT_TRUE(std::isinf(fit_excess_batch(fit, 16.0)));
}

TEST(CriticalBatch, TheMeasuredExcessBatchIsInterpolatedBetweenTheBatchesAroundTheCrossing) {
  // Samples: 16 x 1000 = 16000 (reference), 32 x 550 = 17600 (1.1x), 64 x 330 = 21120 (1.32x).
  const auto points = points_of({{16, 1000}, {32, 550}, {64, 330}});
  const auto b = measured_excess_batch(points);
  ASSERT_TRUE(b);
  const double t = (std::log(1.2) - std::log(1.1)) / (std::log(1.32) - std::log(1.1));
  EXPECT_NEAR(*b, std::exp(std::log(32.0) + t * std::log(2.0)), 1e-9);
  // Perfect scaling throughout: never 20% over.
  EXPECT_FALSE(measured_excess_batch(points_of({{16, 1000}, {32, 500}, {64, 250}})));
  EXPECT_FALSE(measured_excess_batch(points_of({{16, 1000}})));
}

TEST(CriticalBatch, BothDefinitionsGetSeedIntervalsWithThreeSeedsAndNoneWithFewer) {
  std::vector<SeedSteps> cells;
  const double deviation[3] = {-0.05, 0.0, 0.05};
  for (double batch : {16.0, 32.0, 64.0, 128.0, 256.0}) {
    for (int seed = 0; seed < 3; ++seed) {
      cells.push_back({batch, seed, (100.0 + 8000.0 / batch) * std::exp(deviation[seed])});
    }
  }
  const auto fit = fit_scaling(seed_mean_points(cells)).value();
  const auto d = critical_batches(fit, cells);
  EXPECT_EQ(d.reference_batch, 16.0);
  EXPECT_EQ(d.largest_batch, 256.0);
  EXPECT_NEAR(d.fit_excess, 1.2 * 16 + 0.2 * 80, 1e-6);
  ASSERT_TRUE(d.measured_excess);
  ASSERT_EQ(d.fit_excess_spread.kind, Spread::Kind::kInterval);
  ASSERT_EQ(d.measured_excess_spread.kind, Spread::Kind::kInterval);
  EXPECT_EQ(d.measured_excess_spread.draws, kSeedResamples);
  EXPECT_LE(d.fit_excess_spread.range.low, d.fit_excess);
  EXPECT_GE(d.fit_excess_spread.range.high, d.fit_excess);
  EXPECT_LE(d.measured_excess_spread.range.low, *d.measured_excess);
  EXPECT_GE(d.measured_excess_spread.range.high, *d.measured_excess);
  cells.pop_back();  // batch 256 down to 2 seeds: no 95%, a seed range
  const auto fewer = critical_batches(fit_scaling(seed_mean_points(cells)).value(), cells);
  EXPECT_EQ(fewer.fit_excess_spread.kind, Spread::Kind::kSeedRange);
  EXPECT_EQ(fewer.measured_excess_spread.kind, Spread::Kind::kSeedRange);
  EXPECT_TRUE(fewer.measured_excess);
}

// Two seeds per batch, seed 0 on the curve S = 100 + 8000 / B and seed 1 `slower` times it.
std::vector<SeedSteps> two_seeds(double slower) {
  std::vector<SeedSteps> cells;
  for (double batch : {16.0, 32.0, 64.0, 128.0}) {
    cells.push_back({batch, 0, 100.0 + 8000.0 / batch});
    cells.push_back({batch, 1, slower * (100.0 + 8000.0 / batch) * (batch > 40 ? 1.1 : 1.0)});
  }
  return cells;
}

std::vector<SeedSteps> seed_of(const std::vector<SeedSteps>& cells, int64_t seed) {
  std::vector<SeedSteps> out;
  for (const auto& c : cells) {
    if (c.seed == seed) out.push_back(c);
  }
  return out;
}

TEST(CriticalBatch, TwoSeedsGiveARangeOverEachSeedsOwnFitAndCrossing) {
  const auto cells = two_seeds(1.3);
  const auto d = critical_batches(fit_scaling(seed_mean_points(cells)).value(), cells);
  std::vector<double> fitted, measured;
  for (int64_t seed : {0, 1}) {
    const auto points = seed_mean_points(seed_of(cells, seed));
    fitted.push_back(fit_excess_batch(fit_scaling(points).value(), 16.0));
    measured.push_back(measured_excess_batch(points).value());
  }
  ASSERT_EQ(d.fit_excess_spread.kind, Spread::Kind::kSeedRange);
  EXPECT_EQ(d.fit_excess_spread.draws, 2);
  EXPECT_DOUBLE_EQ(d.fit_excess_spread.range.low, std::min(fitted[0], fitted[1]));
  EXPECT_DOUBLE_EQ(d.fit_excess_spread.range.high, std::max(fitted[0], fitted[1]));
  EXPECT_LT(d.fit_excess_spread.range.low, d.fit_excess_spread.range.high);
  ASSERT_EQ(d.measured_excess_spread.kind, Spread::Kind::kSeedRange);
  EXPECT_DOUBLE_EQ(d.measured_excess_spread.range.low, std::min(measured[0], measured[1]));
  EXPECT_DOUBLE_EQ(d.measured_excess_spread.range.high, std::max(measured[0], measured[1]));
  EXPECT_EQ(d.measured_excess_spread.unbounded, 0);
}

TEST(CriticalBatch, ASeedThatNeverCrossesIsAnUnboundedEndNotDropped) {
  auto cells = two_seeds(1.0);
  // Seed 1 scales perfectly: its samples never exceed its batch 16's.
  for (auto& c : cells) {
    if (c.seed == 1) c.steps = 1000.0 * 16.0 / c.batch;
  }
  const auto d = critical_batches(fit_scaling(seed_mean_points(cells)).value(), cells);
  ASSERT_EQ(d.measured_excess_spread.kind, Spread::Kind::kSeedRange);
  EXPECT_EQ(d.measured_excess_spread.draws, 2);
  EXPECT_EQ(d.measured_excess_spread.unbounded, 1);
  EXPECT_TRUE(std::isinf(d.measured_excess_spread.range.high));
  EXPECT_TRUE(std::isfinite(d.measured_excess_spread.range.low));
}

TEST(CriticalBatch, ResamplesWithoutACrossingAreCountedAndMakeTheTopUnbounded) {
  // The crossing lies just below the largest batch (64's samples are 1.21x 16's): many resamples
  // of seeds 15% apart do not cross by 64.
  std::vector<SeedSteps> cells;
  const double deviation[3] = {-0.15, 0.0, 0.15};
  for (const auto& [batch, steps] : std::vector<std::pair<double, double>>{
           {16.0, 1000.0}, {32.0, 550.0}, {64.0, 1000.0 * 1.21 / 4.0}}) {
    for (int seed = 0; seed < 3; ++seed)
      cells.push_back({batch, seed, steps * std::exp(deviation[seed])});
  }
  const auto d = critical_batches(fit_scaling(seed_mean_points(cells)).value(), cells);
  const auto& s = d.measured_excess_spread;
  ASSERT_EQ(s.kind, Spread::Kind::kInterval);
  EXPECT_EQ(s.draws, kSeedResamples);
  EXPECT_GT(s.unbounded, kSeedResamples / 40);  // more than 2.5%: the top is unbounded
  EXPECT_LT(s.unbounded, kSeedResamples);
  EXPECT_TRUE(std::isinf(s.range.high));
}

TEST(CriticalBatch, OneSeedGivesTheFitsStandardErrorAndSaysWhyTheCrossingHasNone) {
  const auto cells = seed_of(two_seeds(1.0), 0);
  auto curve = cells;
  curve[2].steps *= 1.05;  // off the curve, so the fit has a residual and a standard error
  const auto fit = fit_scaling(seed_mean_points(curve)).value();
  ASSERT_TRUE(fit.b_crit_se);
  const auto d = critical_batches(fit, curve);
  ASSERT_EQ(d.fit_excess_spread.kind, Spread::Kind::kStandardError);
  EXPECT_DOUBLE_EQ(d.fit_excess_spread.standard_error, 0.2 * *fit.b_crit_se);
  ASSERT_EQ(d.measured_excess_spread.kind, Spread::Kind::kNone);
  EXPECT_NE(d.measured_excess_spread.why.find("one seed"), std::string::npos);
}

TEST(CriticalBatch, NoiseScaleSpreadIsABootstrapOfTheRunsFromThreeRunsAndARangeBelow) {
  const std::vector<double> runs = {100.0, 150.0, 200.0, 120.0, 300.0};
  const auto s = noise_scale_spread(runs);
  ASSERT_EQ(s.kind, Spread::Kind::kInterval);
  EXPECT_EQ(s.draws, kSeedResamples);
  EXPECT_LT(s.range.low, 174.0);  // the mean
  EXPECT_GT(s.range.high, 174.0);
  EXPECT_GT(s.range.low, 100.0);  // a mean's interval is narrower than the runs' range
  EXPECT_LT(s.range.high, 300.0);
  const auto two = noise_scale_spread({100.0, 150.0});
  EXPECT_EQ(two.kind, Spread::Kind::kRunRange);
  EXPECT_DOUBLE_EQ(two.range.low, 100.0);
  EXPECT_DOUBLE_EQ(two.range.high, 150.0);
  EXPECT_EQ(noise_scale_spread({100.0}).kind, Spread::Kind::kNone);
  EXPECT_EQ(noise_scale_spread({}).why, "not measured");
}

}  // namespace
}  // namespace batchlab::results
