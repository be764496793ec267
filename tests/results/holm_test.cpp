// Holm's step-down adjustment (results/holm.h): a worked example computed by hand, the monotone
// step, the bound at 1, and its family-wise error on independent null p-values (at most alpha;
// one test alone would be wrong in 1 - 0.95^m of the families).
#include "results/holm.h"

#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <vector>

namespace batchlab::results {
namespace {

TEST(Holm, AdjustsByTheRankAndKeepsTheOrderOfTheInput) {
  // Sorted: 0.01 (x4 = 0.04), 0.02 (x3 = 0.06), 0.03 (x2 = 0.06), 0.5 (x1 = 0.5).
  const auto adjusted = holm_adjusted({0.03, 0.5, 0.01, 0.02});
  ASSERT_EQ(adjusted.size(), 4u);
  EXPECT_DOUBLE_EQ(adjusted[0], 0.06);
  EXPECT_DOUBLE_EQ(adjusted[1], 0.5);
  EXPECT_DOUBLE_EQ(adjusted[2], 0.04);
  EXPECT_DOUBLE_EQ(adjusted[3], 0.06);
}

TEST(Holm, AnAdjustedValueNeverFallsBelowASmallerOnesAndStopsAtOne) {
  // 0.01 x 3 = 0.03, 0.011 x 2 = 0.022 -> raised to 0.03 (monotone), 0.9 x 1 = 0.9.
  const auto adjusted = holm_adjusted({0.011, 0.01, 0.9});
  EXPECT_DOUBLE_EQ(adjusted[0], 0.03);
  EXPECT_DOUBLE_EQ(adjusted[1], 0.03);
  EXPECT_DOUBLE_EQ(adjusted[2], 0.9);
  EXPECT_DOUBLE_EQ(holm_adjusted({0.6, 0.7})[0], 1.0);
  EXPECT_TRUE(holm_adjusted({}).empty());
  EXPECT_THROW(holm_adjusted({0.1, 1.5}), std::invalid_argument);
  EXPECT_THROW(holm_adjusted({-0.1}), std::invalid_argument);
}

TEST(Holm, KeepsTheFamilyWiseErrorOfIndependentNullTestsAtAlpha) {
  std::mt19937_64 generator(7);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const int families = 20000, tests = 8;
  int any_raw = 0, any_holm = 0;
  for (int f = 0; f < families; ++f) {
    std::vector<double> p;
    for (int t = 0; t < tests; ++t) p.push_back(uniform(generator));
    bool raw = false, holm = false;
    for (double v : p) raw = raw || v < kFamilyWiseLevel;
    for (double v : holm_adjusted(p)) holm = holm || v < kFamilyWiseLevel;
    any_raw += raw;
    any_holm += holm;
  }
  // Unadjusted: 1 - 0.95^8 = 34% of families hold a false rejection; Holm: at most 5% (exactly
  // Bonferroni's 1 - (1 - 0.05/8)^8 = 4.9% for independent tests), with 3 standard errors of room.
  EXPECT_NEAR(any_raw / static_cast<double>(families), 0.337, 0.01);
  EXPECT_LT(any_holm / static_cast<double>(families), 0.05 + 3 * 0.0015);
  EXPECT_GT(any_holm / static_cast<double>(families), 0.04);
}

}  // namespace
}  // namespace batchlab::results
