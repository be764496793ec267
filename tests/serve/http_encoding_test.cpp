#include "serve/http_encoding.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <limits>
#include <string>

namespace batchlab::serve {
namespace {

// Inflates a gzip stream with zlib, as a browser would.
std::string gunzip(const std::string& data) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
  std::string out(1 << 20, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(inflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(out.size() - z.avail_out);
  inflateEnd(&z);
  return out;
}

TEST(HttpEncoding, GzipRoundTripsAndShrinksJson) {
  std::string text = "{\"y\":[";
  for (int i = 0; i < 5000; ++i) text += std::to_string(2.0 / (1 + i)) + ",";
  text += "0]}";
  for (int level : {1, 9}) {
    const std::string packed = gzip(text, level);
    EXPECT_EQ(gunzip(packed), text) << "level " << level;
    EXPECT_LT(packed.size(), text.size() / 2) << "level " << level;
  }
  EXPECT_EQ(gunzip(gzip("", 1)), "");
}

TEST(HttpEncoding, AcceptEncodingIsReadAsBrowsersWriteIt) {
  EXPECT_TRUE(accepts_gzip("gzip, deflate, br, zstd"));
  EXPECT_TRUE(accepts_gzip("br;q=1.0, GZIP;q=0.5"));
  EXPECT_TRUE(accepts_gzip("*"));
  EXPECT_FALSE(accepts_gzip(""));
  EXPECT_FALSE(accepts_gzip("br, deflate"));
  EXPECT_FALSE(accepts_gzip("gzip;q=0"));
  EXPECT_FALSE(accepts_gzip("gzip; q=0.0, br"));
  EXPECT_FALSE(accepts_gzip("x-gzip-not"));
}

TEST(HttpEncoding, RoundingToSignificantDigitsKeepsTheValueClose) {
  EXPECT_DOUBLE_EQ(round_significant(0.123456789, 4), 0.1235);
  EXPECT_DOUBLE_EQ(round_significant(123456.789, 4), 123500.0);
  EXPECT_DOUBLE_EQ(round_significant(-2.5e-7, 2), -2.5e-7);
  EXPECT_EQ(round_significant(0.0, 4), 0.0);
  EXPECT_TRUE(std::isnan(round_significant(std::numeric_limits<double>::quiet_NaN(), 4)));
  EXPECT_TRUE(std::isinf(round_significant(std::numeric_limits<double>::infinity(), 4)));
}

}  // namespace
}  // namespace batchlab::serve
