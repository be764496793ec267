// results/critical_batch.h: the 20%-over-linear-scaling batch from the fit (its closed form against
// a numerical solve of S(B) B = 1.2 S(B_ref) B_ref) and from measured steps (interpolated in log
// samples against log batch, none when no batch exceeds 1.2x), and their seed intervals.
#include "results/critical_batch.h"

#include <gtest/gtest.h>

#include <cmath>
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
  ASSERT_TRUE(d.fit_excess_interval && d.measured_excess_interval);
  EXPECT_LE(d.fit_excess_interval->low, d.fit_excess);
  EXPECT_GE(d.fit_excess_interval->high, d.fit_excess);
  EXPECT_LE(d.measured_excess_interval->low, *d.measured_excess);
  EXPECT_GE(d.measured_excess_interval->high, *d.measured_excess);
  cells.pop_back();  // batch 256 down to 2 seeds
  const auto fewer = critical_batches(fit_scaling(seed_mean_points(cells)).value(), cells);
  EXPECT_FALSE(fewer.fit_excess_interval);
  EXPECT_TRUE(fewer.measured_excess);
}

}  // namespace
}  // namespace batchlab::results
