// The per-seed range (results/seed_range.h): each seed fitted on its own cells, the min-max over
// those fits, a seed without a floor making the B_crit range unbounded, and none from one seed.
#include "results/seed_range.h"

#include <gtest/gtest.h>

#include <cmath>

namespace batchlab::results {
namespace {

TEST(SeedRange, MinMaxOfPerSeedFits) {
  // Seed 0 on S = 100 + 51200/B (B_crit 512), seed 1 on S = 200 + 51200/B (B_crit 256), exact.
  std::vector<SeedSteps> cells;
  for (double b : {64.0, 256.0, 1024.0}) {
    cells.push_back({b, 0, 100.0 + 51200.0 / b});
    cells.push_back({b, 1, 200.0 + 51200.0 / b});
  }
  cells.push_back({64, 2, 900.0});  // seed 2 measured one batch: no fit of its own
  const auto range = per_seed_range(cells);
  ASSERT_TRUE(range);
  EXPECT_EQ(range->fits, 2);
  EXPECT_NEAR(range->s_min.low, 100.0, 1e-6);
  EXPECT_NEAR(range->s_min.high, 200.0, 1e-6);
  EXPECT_NEAR(range->e_min.low, 51200.0, 1e-3);
  EXPECT_NEAR(range->e_min.high, 51200.0, 1e-3);
  EXPECT_NEAR(range->b_crit.low, 256.0, 1e-6);
  EXPECT_NEAR(range->b_crit.high, 512.0, 1e-6);
}

TEST(SeedRange, ASeedWithoutAFloorLeavesItUnbounded) {
  // Seed 1's steps fall faster than 1/B: S_min < 0, no B_crit, so the range has no upper end.
  const std::vector<SeedSteps> cells = {
      {64, 0, 900.0}, {128, 0, 500.0}, {256, 0, 300.0}, {64, 1, 1000.0}, {128, 1, 450.0}};
  const auto range = per_seed_range(cells);
  ASSERT_TRUE(range);
  EXPECT_TRUE(std::isinf(range->b_crit.high));
  EXPECT_LT(range->s_min.low, 0.0);
}

TEST(SeedRange, NoneFromOneSeed) {
  EXPECT_FALSE(per_seed_range({{64, 0, 900.0}, {128, 0, 500.0}, {64, 1, 950.0}}));
}

}  // namespace
}  // namespace batchlab::results
