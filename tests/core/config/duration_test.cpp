// schedule.budget strings.
#include "core/config/duration.h"

#include <gtest/gtest.h>

namespace batchlab::config {
namespace {

double seconds_of(const char* text) {
  const ParsedDuration parsed = parse_duration(text);
  EXPECT_TRUE(parsed.seconds.has_value()) << text << ": " << parsed.error;
  return parsed.seconds.value_or(-1.0);
}

std::string error_of(const char* text) {
  const ParsedDuration parsed = parse_duration(text);
  EXPECT_FALSE(parsed.seconds.has_value()) << text << " should be rejected";
  return parsed.error;
}

TEST(Duration, SingleUnits) {
  EXPECT_EQ(seconds_of("2h"), 7200.0);
  EXPECT_EQ(seconds_of("90m"), 5400.0);
  EXPECT_EQ(seconds_of("45s"), 45.0);
}

TEST(Duration, CombinedAndDecimal) {
  EXPECT_EQ(seconds_of("1h30m"), 5400.0);
  EXPECT_EQ(seconds_of("1.5h"), 5400.0);
  EXPECT_EQ(seconds_of("1h0m30s"), 3630.0);
  EXPECT_EQ(seconds_of("2m0.5s"), 120.5);
}

TEST(Duration, ZeroIsWellFormedButLeftToTheRangeRule) { EXPECT_EQ(seconds_of("0s"), 0.0); }

TEST(Duration, MalformedSaysHowToWriteIt) {
  for (const char* bad : {"", "2", "h", "2 h", "-1h", "1.h", "1e3s", "1h 30m"}) {
    EXPECT_NE(error_of(bad).find("\"1h30m\""), std::string::npos) << bad;
  }
}

TEST(Duration, UnknownUnit) {
  EXPECT_NE(error_of("2d").find("unknown unit 'd'"), std::string::npos);
}

TEST(Duration, UnitsInOrderOnce) {
  EXPECT_NE(error_of("30m1h").find("out of order or repeated"), std::string::npos);
  EXPECT_NE(error_of("1h1h").find("out of order or repeated"), std::string::npos);
}

TEST(Duration, FormatReadsBackExactly) {
  for (double seconds : {0.0, 45.0, 5400.0, 0.1, 1.0 / 3.0, 123456789.25, 1e-7, 1e21}) {
    const std::string text = format_duration(seconds);
    EXPECT_EQ(text.back(), 's');
    EXPECT_EQ(seconds_of(text.c_str()), seconds) << text;
  }
  EXPECT_EQ(format_duration(5400.0), "5400s");
  EXPECT_EQ(format_duration(0.25), "0.25s");
}

}  // namespace
}  // namespace batchlab::config
