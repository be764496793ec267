// The row helpers every table shares: the UTC times the store writes, read back as seconds.
#include "results/rows.h"

#include <gtest/gtest.h>

namespace batchlab::results {
namespace {

TEST(UtcSeconds, ReadsWhatUtcNowWrites) {
  EXPECT_DOUBLE_EQ(*utc_seconds("1970-01-01T00:00:00.000Z"), 0.0);
  EXPECT_NEAR(*utc_seconds("2026-11-24T00:04:20.748Z"), 1795478660.748, 1e-6);
  const auto now = utc_seconds(utc_now());
  ASSERT_TRUE(now.has_value());
  EXPECT_GT(*now, 1.7e9);
  // Anything else is no time: another zone, a date alone, words.
  EXPECT_FALSE(utc_seconds("2026-11-24T00:04:20.748+01:00").has_value());
  EXPECT_FALSE(utc_seconds("2026-11-24").has_value());
  EXPECT_FALSE(utc_seconds("yesterday").has_value());
}

}  // namespace
}  // namespace batchlab::results
