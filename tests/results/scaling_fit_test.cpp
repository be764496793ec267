// The S(B) = S_min + E_min/B fit (results/scaling_fit.h): exact recovery, robustness to noise and
// to a censored cell, and its uncertainty against an independent computation (uncentred normal
// equations and the gradient form of the error propagation).
#include "results/scaling_fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace batchlab::results {
namespace {

constexpr double kSMin = 400.0;
constexpr double kEMin = 409600.0;  // B_crit = 1024

std::vector<FitPoint> curve_points(double noise, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> relative(0.0, noise);
  std::vector<FitPoint> points;
  for (double b = 32; b <= 16384; b *= 2) {
    const double factor = noise > 0 ? 1.0 + relative(rng) : 1.0;
    points.push_back({b, (kSMin + kEMin / b) * factor, false, "batch " + std::to_string(b)});
  }
  return points;
}

TEST(StudyFit, RecoversSMinAndEMinFromExactPoints) {
  const auto fit = fit_scaling(curve_points(0.0, 0));
  ASSERT_TRUE(fit);
  EXPECT_NEAR(fit->s_min, kSMin, 0.01 * kSMin);
  EXPECT_NEAR(fit->e_min, kEMin, 0.01 * kEMin);
  ASSERT_TRUE(fit->b_crit);
  EXPECT_NEAR(*fit->b_crit, 1024.0, 0.01 * 1024.0);
  EXPECT_EQ(fit->points, 10);
  EXPECT_EQ(fit->batches, 10);
  // Exact points leave no residual: the standard errors vanish.
  ASSERT_TRUE(fit->s_min_se);
  EXPECT_LT(*fit->s_min_se, 1e-6 * kSMin);
}

TEST(StudyFit, StaysWithinFivePercentWithNoiseAndACensoredCell) {
  // 3% relative noise (fixed seeds) and a censored cell whose "steps" are only its cap, far below
  // the curve: left out and named, it cannot pull the fit.
  for (unsigned seed : {1u, 2u, 3u}) {
    SCOPED_TRACE(seed);
    auto points = curve_points(0.03, seed);
    points.push_back({32768.0, 0.5 * kSMin, true, "batch 32768 seed 0"});
    const auto fit = fit_scaling(points);
    ASSERT_TRUE(fit);
    EXPECT_NEAR(fit->s_min, kSMin, 0.05 * kSMin);
    EXPECT_NEAR(fit->e_min, kEMin, 0.05 * kEMin);
    EXPECT_EQ(fit->points, 10);
    ASSERT_EQ(fit->excluded.size(), 1u);
    EXPECT_EQ(fit->excluded[0], "batch 32768 seed 0");
    ASSERT_TRUE(fit->s_min_se && fit->e_min_se && fit->b_crit_se);
    EXPECT_GT(*fit->b_crit_se, 0.0);
  }
  // Fitted as if reached, the same censored point would have moved S_min by far more than 5%.
  auto points = curve_points(0.03, 1);
  points.push_back({32768.0, 0.5 * kSMin, false, ""});
  EXPECT_GT(std::abs(fit_scaling(points)->s_min - kSMin), 0.05 * kSMin);
}

TEST(StudyFit, UncertaintyMatchesAnIndependentComputation) {
  const auto points = curve_points(0.05, 7);
  const auto fit = fit_scaling(points);
  ASSERT_TRUE(fit && fit->b_crit && fit->b_crit_se);
  // Normal equations A [S, E] = v with x = 1/B, w = 1/S^2, solved by Cramer's rule.
  double a00 = 0, a01 = 0, a11 = 0, v0 = 0, v1 = 0;
  for (const auto& p : points) {
    const double w = 1.0 / (p.steps * p.steps), x = 1.0 / p.batch;
    a00 += w;
    a01 += w * x;
    a11 += w * x * x;
    v0 += w * p.steps;
    v1 += w * x * p.steps;
  }
  const double det = a00 * a11 - a01 * a01;
  const double s = (a11 * v0 - a01 * v1) / det;
  const double e = (a00 * v1 - a01 * v0) / det;
  EXPECT_NEAR(fit->s_min, s, 1e-9 * s);
  EXPECT_NEAR(fit->e_min, e, 1e-9 * e);
  double chi2 = 0;
  for (const auto& p : points) {
    const double r = p.steps - (s + e / p.batch);
    chi2 += r * r / (p.steps * p.steps);
  }
  const double scale = chi2 / (static_cast<double>(points.size()) - 2.0);
  const double var_s = scale * a11 / det, var_e = scale * a00 / det, cov = -scale * a01 / det;
  EXPECT_NEAR(*fit->s_min_se, std::sqrt(var_s), 1e-9 * std::sqrt(var_s));
  EXPECT_NEAR(*fit->e_min_se, std::sqrt(var_e), 1e-9 * std::sqrt(var_e));
  // B = E/S: gradient (dB/dS, dB/dE) = (-E/S^2, 1/S).
  const double gs = -e / (s * s), ge = 1.0 / s;
  const double var_b = gs * gs * var_s + ge * ge * var_e + 2 * gs * ge * cov;
  EXPECT_NEAR(*fit->b_crit_se, std::sqrt(var_b), 1e-9 * std::sqrt(var_b));
}

TEST(StudyFit, NeedsTwoBatchSizesAndGivesNoErrorFromTwo) {
  EXPECT_FALSE(fit_scaling({{256, 100, false, ""}, {256, 110, false, ""}}));
  EXPECT_FALSE(fit_scaling({{256, 100, false, ""}, {512, 80, true, "censored"}}));
  const auto two = fit_scaling({{256, 500, false, ""}, {1024, 200, false, ""}});
  ASSERT_TRUE(two);
  // Through both points: 500 = S + E/256, 200 = S + E/1024 -> E = 102400, S = 100.
  EXPECT_NEAR(two->s_min, 100.0, 1e-9);
  EXPECT_NEAR(two->e_min, 102400.0, 1e-6);
  EXPECT_FALSE(two->s_min_se);
  EXPECT_FALSE(two->b_crit_se);
}

TEST(StudyFit, NoCriticalBatchWithoutAPositiveFloor) {
  // Steps falling faster than 1/B: the fitted floor is negative, and no B_crit is claimed.
  const auto fit =
      fit_scaling({{64, 1600, false, ""}, {128, 800, false, ""}, {256, 380, false, ""}});
  ASSERT_TRUE(fit);
  EXPECT_LT(fit->s_min, 0.0);
  EXPECT_FALSE(fit->b_crit);
  EXPECT_FALSE(fit->b_crit_se);
}

}  // namespace
}  // namespace batchlab::results
