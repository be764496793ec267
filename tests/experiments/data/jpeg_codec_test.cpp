#include "experiments/data/jpeg_codec.h"

#include <gtest/gtest.h>
#include <turbojpeg.h>

#include <cstdlib>
#include <memory>

#include "core/errors.h"
#include "tests/experiments/data/image_test_util.h"

namespace batchlab::data {
namespace {

using testing::encode_jpeg;
using testing::ramp_image;

int max_abs_diff(const uint8_t* a, const uint8_t* b, size_t n) {
  int worst = 0;
  for (size_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(int{a[i]} - int{b[i]}));
  return worst;
}

TEST(JpegCodec, DecodesAKnownImageWithinJpegTolerance) {
  const int64_t w = 64, h = 48;
  const auto rgb = ramp_image(w, h, 90);
  const auto jpeg = encode_jpeg(rgb, w, h, 95);
  JpegDecoder decoder;
  const JpegHeader header = decoder.read_header(jpeg.data(), jpeg.size(), "ramp");
  EXPECT_EQ(header.width, w);
  EXPECT_EQ(header.height, h);
  const ImageView view = decoder.decode(jpeg.data(), jpeg.size(), {1, 1}, "ramp");
  ASSERT_EQ(view.width, w);
  ASSERT_EQ(view.height, h);
  EXPECT_EQ(view.stride, w * 3);
  // Smooth ramps at quality 95 come back within a few levels (4:2:0 chroma costs a little).
  EXPECT_LE(max_abs_diff(view.pixels, rgb.data(), rgb.size()), 8);
  // Spot values: the top-left corner is (30, 40, 90) and the bottom-right (220, 210, 90).
  EXPECT_NEAR(view.pixels[0], 30, 6);
  EXPECT_NEAR(view.pixels[1], 40, 6);
  EXPECT_NEAR(view.pixels[2], 90, 6);
  const uint8_t* last = view.pixels + ((h - 1) * w + (w - 1)) * 3;
  EXPECT_NEAR(last[0], 220, 6);
  EXPECT_NEAR(last[1], 210, 6);
}

TEST(JpegCodec, DctScalingDecodesSmallerImagesOfTheSameContent) {
  const int64_t w = 200, h = 120;
  const auto jpeg = encode_jpeg(ramp_image(w, h, 60), w, h, 95);
  JpegDecoder decoder;
  const ImageView half = decoder.decode(jpeg.data(), jpeg.size(), {1, 2}, "x");
  EXPECT_EQ(half.width, 100);
  EXPECT_EQ(half.height, 60);
  // Red ramps left to right over the reduced width too.
  EXPECT_NEAR(half.pixels[0], 31, 6);
  EXPECT_NEAR(half.pixels[(99) * 3], 219, 6);
  const ImageView eighth = decoder.decode(jpeg.data(), jpeg.size(), {1, 8}, "x");
  EXPECT_EQ(eighth.width, 25);
  EXPECT_EQ(eighth.height, 15);
  const auto odd_jpeg = encode_jpeg(ramp_image(101, 37, 0), 101, 37);
  const ImageView odd = decoder.decode(odd_jpeg.data(), odd_jpeg.size(), {1, 4}, "x");
  EXPECT_EQ(odd.width, 26);  // sizes round up, as libjpeg's
  EXPECT_EQ(odd.height, 10);
}

TEST(JpegCodec, ChoosesTheSmallestScaleThatStillCoversTheOutput) {
  EXPECT_EQ(choose_dct_scale(500, 375, 224, 224).den, 1);   // 1/2 would leave 250 x 187
  EXPECT_EQ(choose_dct_scale(1000, 900, 224, 224).den, 4);  // 250 x 225
  EXPECT_EQ(choose_dct_scale(1000, 800, 224, 224).den, 2);  // 1/4 would leave 250 x 200
  EXPECT_EQ(choose_dct_scale(1000, 900, 100, 100).den, 8);  // 125 x 112
  EXPECT_EQ(choose_dct_scale(460, 460, 224, 224).den, 2);   // 230 >= 224
  EXPECT_EQ(choose_dct_scale(100, 100, 224, 224).den, 1);   // enlarging: full size
  for (double side : {300.0, 700.0, 1500.0, 5000.0}) {
    const DctScale s = choose_dct_scale(side, side * 0.8, 224, 160);
    // Covers the output...
    EXPECT_GE(side / s.den, 224.0);
    EXPECT_GE(side * 0.8 / s.den, 160.0);
    // ...and the next smaller factor would not.
    if (s.den < 8) {
      EXPECT_TRUE(side / (2 * s.den) < 224.0 || side * 0.8 / (2 * s.den) < 160.0);
    }
  }
}

TEST(JpegCodec, GarbageAndTruncatedFilesAreErrorsNamingTheFile) {
  JpegDecoder decoder;
  const std::vector<uint8_t> garbage = {'n', 'o', 't', ' ', 'a', ' ', 'j', 'p', 'e', 'g'};
  try {
    decoder.read_header(garbage.data(), garbage.size(), "/data/train/n01/bad.JPEG");
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("/data/train/n01/bad.JPEG"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(decoder.read_header(nullptr, 0, "empty.jpg"), DataError);
  const std::vector<uint8_t> tiny = {0xff, 0xd8, 0xff};  // start marker, then nothing
  EXPECT_THROW(decoder.read_header(tiny.data(), tiny.size(), "tiny.jpg"), DataError);

  const int64_t w = 96, h = 96;
  const auto jpeg = encode_jpeg(ramp_image(w, h, 10), w, h, 90);
  // Cut in the middle of the entropy-coded data: the header is fine, the pixels end early.
  const std::vector<uint8_t> cut(jpeg.begin(),
                                 jpeg.begin() + static_cast<long>(jpeg.size() * 6 / 10));
  EXPECT_NO_THROW(decoder.read_header(cut.data(), cut.size(), "cut.JPEG"));
  try {
    decoder.decode(cut.data(), cut.size(), {1, 1}, "/data/val/n02/cut.JPEG");
    FAIL() << "expected a DataError for a truncated JPEG";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("/data/val/n02/cut.JPEG"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
  // The decoder is still usable afterwards.
  EXPECT_NO_THROW(decoder.decode(jpeg.data(), jpeg.size(), {1, 1}, "ok"));
}

TEST(JpegCodec, CmykImagesAreConvertedToRgb) {
  // A YCCK JPEG written by TurboJPEG from CMYK pixels; decoded values are the stored (Adobe,
  // inverted) ones, so RGB = (c k, m k, y k) / 255.
  const int w = 16, h = 16;
  std::vector<uint8_t> cmyk(static_cast<size_t>(w * h * 4));
  for (int i = 0; i < w * h; ++i) {
    cmyk[4 * i] = 255;
    cmyk[4 * i + 1] = 128;
    cmyk[4 * i + 2] = 0;
    cmyk[4 * i + 3] = 200;
  }
  tjhandle c = tjInitCompress();
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  ASSERT_EQ(tjCompress2(c, cmyk.data(), w, 0, h, TJPF_CMYK, &buf, &size, TJSAMP_444, 100, 0), 0);
  std::vector<uint8_t> jpeg(buf, buf + size);
  tjFree(buf);
  tjDestroy(c);
  JpegDecoder decoder;
  const ImageView v = decoder.decode(jpeg.data(), jpeg.size(), {1, 1}, "cmyk.jpg");
  ASSERT_EQ(v.width, w);
  EXPECT_NEAR(v.pixels[0], 200, 4);
  EXPECT_NEAR(v.pixels[1], 100, 4);
  EXPECT_NEAR(v.pixels[2], 0, 4);
}

TEST(JpegCodec, ReadFileBytesNamesAMissingFile) {
  std::vector<uint8_t> out;
  try {
    read_file_bytes("/nonexistent/dir/img.JPEG", out);
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/img.JPEG"), std::string::npos);
  }
}

}  // namespace
}  // namespace batchlab::data
