// Helpers for the image-pipeline tests: a scratch directory, synthetic RGB images whose content
// encodes their class and index, JPEGs written with TurboJPEG, and an ImageNet-style folder tree.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "experiments/data/jpeg_codec.h"
#include "tests/temp_dir.h"

namespace batchlab::data::testing {

using ScratchDir = test_support::TempDir;

// Interleaved RGB, smooth (so JPEG keeps it within a few levels): red is a horizontal ramp, green a
// vertical one, blue a constant `blue`.
inline std::vector<uint8_t> ramp_image(int64_t w, int64_t h, uint8_t blue) {
  std::vector<uint8_t> px(static_cast<size_t>(w * h * 3));
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      uint8_t* p = px.data() + (y * w + x) * 3;
      p[0] = static_cast<uint8_t>(w > 1 ? 30 + x * 190 / (w - 1) : 128);
      p[1] = static_cast<uint8_t>(h > 1 ? 40 + y * 170 / (h - 1) : 128);
      p[2] = blue;
    }
  }
  return px;
}

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

inline std::vector<uint8_t> encode_jpeg(const std::vector<uint8_t>& rgb, int64_t w, int64_t h,
                                        int quality = 95) {
  JpegEncoder encoder;
  return encoder.encode({rgb.data(), w, h, w * 3}, quality);
}

inline void write_jpeg(const std::string& path, const std::vector<uint8_t>& rgb, int64_t w,
                       int64_t h, int quality = 95) {
  write_bytes(path, encode_jpeg(rgb, w, h, quality));
}

// The blue level that marks class `label` in make_image_folder's images.
inline uint8_t class_blue(int64_t label) { return static_cast<uint8_t>(20 + 50 * label); }

// ROOT/train/<classes[c]>/img_<i>.JPEG (train_per_class each) and ROOT/val/... (val_per_class),
// sizes varying around w x h; every image of class c has blue = class_blue(c).
inline void make_image_folder(const std::string& root, const std::vector<std::string>& classes,
                              int64_t train_per_class, int64_t val_per_class, int64_t w = 60,
                              int64_t h = 44) {
  for (const char* split : {"train", "val"}) {
    const int64_t n = std::string(split) == "train" ? train_per_class : val_per_class;
    for (size_t c = 0; c < classes.size(); ++c) {
      for (int64_t i = 0; i < n; ++i) {
        const int64_t iw = w + 4 * i, ih = h + 2 * (i % 3);
        write_jpeg(root + "/" + split + "/" + classes[c] + "/img_" + std::to_string(i) + ".JPEG",
                   ramp_image(iw, ih, class_blue(static_cast<int64_t>(c))), iw, ih);
      }
    }
  }
}

}  // namespace batchlab::data::testing
