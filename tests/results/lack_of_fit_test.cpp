// The lack-of-fit F test of S(B) = S_min + E_min / B (results/lack_of_fit.h): the F distribution
// against published table values, the test on the text study's own seeds (Nesterov's curve misses,
// LAMB's fits), its false-alarm rate on data drawn from the curve, and where it declines to answer.
#include "results/lack_of_fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <vector>

#include "results/student_t.h"

namespace batchlab::results {
namespace {

std::optional<LackOfFit> test_of(const std::vector<SeedSteps>& cells) {
  const auto fit = fit_scaling(seed_mean_points(cells));
  if (!fit) throw std::logic_error("no fit");
  return lack_of_fit(*fit, cells);
}

TEST(FDistribution, UpperTailMatchesTheTables) {
  // Upper 5% and 1% points of F (e.g. Abramowitz and Stegun table 26.9).
  EXPECT_NEAR(f_distribution_sf(3.2592, 4, 12), 0.05, 1e-4);
  EXPECT_NEAR(f_distribution_sf(4.9646, 1, 10), 0.05, 1e-4);
  EXPECT_NEAR(f_distribution_sf(4.9382, 3, 20), 0.01, 1e-4);
  EXPECT_NEAR(f_distribution_sf(161.45, 1, 1), 0.05, 1e-4);
  EXPECT_DOUBLE_EQ(f_distribution_sf(0.0, 4, 12), 1.0);
  EXPECT_DOUBLE_EQ(f_distribution_sf(INFINITY, 4, 12), 0.0);
  EXPECT_THROW(f_distribution_sf(1.0, 0, 12), std::invalid_argument);
}

TEST(FDistribution, WithOneNumeratorDegreeItIsTheSquareOfStudentsT) {
  for (const double t : {0.5, 1.7, 3.2}) {
    for (const double dof : {2.0, 7.0, 30.0}) {
      EXPECT_NEAR(f_distribution_sf(t * t, 1, dof), 2.0 * (1.0 - student_t_cdf(t, dof)), 1e-10);
    }
  }
}

// docs/data/text_scaling_study.db, steps to validation loss 5.8 (batch, seed, steps; rounded as
// `batchlab report` prints them).
const std::vector<SeedSteps> kNesterov = {
    {16, 0, 3927.6}, {16, 1, 5151.8}, {16, 2, 5185.2}, {32, 0, 1761.0}, {32, 1, 2873.8},
    {32, 2, 1613.2}, {64, 0, 823.8},  {64, 1, 797.2},  {64, 2, 703.5},  {128, 0, 439.0},
    {128, 1, 511.0}, {128, 2, 589.7}, {256, 0, 421.0}, {256, 1, 470.1}, {256, 2, 418.9},
    {512, 0, 396.4}, {512, 1, 439.4}, {512, 2, 337.5}};
const std::vector<SeedSteps> kLamb = {
    {16, 0, 784.2},  {16, 1, 746.4},  {16, 2, 773.4},  {32, 0, 445.2},  {32, 1, 442.9},
    {32, 2, 444.2},  {64, 0, 288.8},  {64, 1, 283.6},  {64, 2, 305.6},  {128, 0, 194.6},
    {128, 1, 206.4}, {128, 2, 191.7}, {256, 0, 164.9}, {256, 1, 170.1}, {256, 2, 155.2},
    {512, 0, 144.3}, {512, 1, 140.0}, {512, 2, 138.1}};

TEST(LackOfFit, NesterovsStepsOnTheTextStudyMissTheCurve) {
  // Steps fall 2.3x and 2.6x a doubling from 16 to 64, faster than S_min + E_min / B can.
  const auto test = test_of(kNesterov);
  ASSERT_TRUE(test);
  EXPECT_EQ(test->dof_lack, 4);
  EXPECT_EQ(test->dof_pure, 12);
  EXPECT_GT(test->f, 6.0);
  EXPECT_LT(test->p, 0.01);
  // Its worst batch is 16: 4,717 measured against about 3,190 on the curve.
  EXPECT_DOUBLE_EQ(test->worst_batch, 16);
  EXPECT_NEAR(test->worst_measured, 4717, 1);
  EXPECT_NEAR(test->worst_fitted, 3190, 20);
}

TEST(LackOfFit, LambsStepsOnTheTextStudyFitTheCurve) {
  const auto test = test_of(kLamb);
  ASSERT_TRUE(test);
  EXPECT_LT(test->f, 2.0);
  EXPECT_GT(test->p, 0.2);
}

TEST(LackOfFit, RaisesFewFalseAlarmsOnStepsDrawnFromTheCurve) {
  // 6 batches (16-512) x 3 seeds, log-normal seed noise of 15% (the text study's LAMB and AdamW
  // seeds spread 2-30%), S_min 150, B_crit 80: how often p < 0.05 when the curve is true.
  std::mt19937_64 rng(20261128);
  std::normal_distribution<double> noise(0.0, 0.15);
  constexpr int kReplications = 2000;
  int alarms = 0;
  for (int r = 0; r < kReplications; ++r) {
    std::vector<SeedSteps> cells;
    for (double batch = 16; batch <= 512; batch *= 2) {
      for (int64_t seed = 0; seed < 3; ++seed) {
        cells.push_back({batch, seed, (150.0 + 150.0 * 80.0 / batch) * std::exp(noise(rng))});
      }
    }
    const auto test = test_of(cells);
    ASSERT_TRUE(test);
    if (test->p < 0.05) ++alarms;
  }
  const double rate = static_cast<double>(alarms) / kReplications;
  // Nominal 5%; the weighted fit on steps is not least squares on log steps, so allow some slack,
  // but a test that cried wolf one time in eight would fail here.
  std::printf("false-alarm rate at p < 0.05: %.4f\n", rate);
  EXPECT_GT(rate, 0.02) << rate;
  EXPECT_LT(rate, 0.08) << rate;
}

TEST(LackOfFit, DeclinesWhereItHasNothingToTest) {
  // Two batches: the curve passes through both means.
  EXPECT_FALSE(test_of({{16, 0, 800}, {16, 1, 760}, {32, 0, 450}, {32, 1, 440}}));
  // One seed per batch: no pure error.
  EXPECT_FALSE(test_of({{16, 0, 800}, {32, 0, 450}, {64, 0, 290}}));
  // Seeds that agree exactly: no spread to compare the misses with.
  EXPECT_FALSE(test_of(
      {{16, 0, 800}, {16, 1, 800}, {32, 0, 450}, {32, 1, 450}, {64, 0, 300}, {64, 1, 300}}));
  // A seed with two cells at a batch counts once (their geometric mean).
  const auto twice = test_of({{16, 0, 800},
                              {16, 0, 800},
                              {16, 1, 760},
                              {32, 0, 450},
                              {32, 1, 440},
                              {64, 0, 290},
                              {64, 1, 300}});
  ASSERT_TRUE(twice);
  EXPECT_EQ(twice->dof_pure, 3);
  ScalingFit fit;
  EXPECT_THROW(lack_of_fit(fit, {{0, 0, 10}}), std::invalid_argument);
}

}  // namespace
}  // namespace batchlab::results
