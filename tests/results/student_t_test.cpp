// Student's t (results/student_t.h) against published table values, and Welch's degrees of
// freedom against hand computation.
#include "results/student_t.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <stdexcept>

namespace batchlab::results {
namespace {

TEST(StudentT, QuantilesMatchTheTables) {
  // 97.5% quantiles (two-sided 95%), e.g. Abramowitz and Stegun table 26.10.
  EXPECT_NEAR(student_t_quantile(0.975, 1), 12.7062, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.975, 2), 4.3027, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.975, 4), 2.7764, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.975, 10), 2.2281, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.975, 30), 2.0423, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.95, 5), 2.0150, 1e-4);
  // Far out, t approaches the normal.
  EXPECT_NEAR(student_t_quantile(0.975, 1e6), 1.95996, 1e-4);
  // Fractional degrees of freedom lie between their neighbours.
  const double q = student_t_quantile(0.975, 4.5);
  EXPECT_LT(q, student_t_quantile(0.975, 4));
  EXPECT_GT(q, student_t_quantile(0.975, 5));
}

TEST(StudentT, TheCdfIsSymmetricAndInvertsTheQuantile) {
  EXPECT_DOUBLE_EQ(student_t_cdf(0.0, 3), 0.5);
  EXPECT_NEAR(student_t_cdf(1.3, 3) + student_t_cdf(-1.3, 3), 1.0, 1e-12);
  // Cauchy (1 dof) has a closed form: 1/2 + atan(t)/pi.
  EXPECT_NEAR(student_t_cdf(2.0, 1), 0.5 + std::atan(2.0) / std::numbers::pi, 1e-10);
  for (double dof : {1.5, 3.0, 7.25, 40.0}) {
    for (double p : {0.01, 0.3, 0.9, 0.995}) {
      EXPECT_NEAR(student_t_cdf(student_t_quantile(p, dof), dof), p, 1e-9) << dof << " " << p;
    }
  }
  EXPECT_LT(student_t_quantile(0.025, 6), 0.0);
}

TEST(StudentT, WelchDegreesOfFreedom) {
  // Equal variances and sizes: n_a + n_b - 2.
  EXPECT_NEAR(welch_dof(0.04, 3, 0.04, 3), 4.0, 1e-12);
  // One side without spread: the other side's n - 1.
  EXPECT_NEAR(welch_dof(0.0, 3, 0.09, 5), 4.0, 1e-12);
  EXPECT_NEAR(welch_dof(0.0, 3, 0.0, 5), 2.0, 1e-12);
  // (0.02 + 0.01)^2 / (0.02^2/2 + 0.01^2/4) by hand.
  EXPECT_NEAR(welch_dof(0.06, 3, 0.05, 5), 0.0009 / (0.0002 + 0.000025), 1e-9);
}

TEST(StudentT, BadArgumentsAreRefused) {
  EXPECT_THROW(student_t_quantile(0.0, 3), std::invalid_argument);
  EXPECT_THROW(student_t_quantile(1.0, 3), std::invalid_argument);
  EXPECT_THROW(student_t_quantile(0.5, 0.0), std::invalid_argument);
  EXPECT_THROW(student_t_cdf(1.0, -1.0), std::invalid_argument);
  EXPECT_THROW(welch_dof(0.1, 1, 0.1, 3), std::invalid_argument);
}

}  // namespace
}  // namespace batchlab::results
