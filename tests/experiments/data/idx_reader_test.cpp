#include "experiments/data/idx_reader.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <initializer_list>
#include <string>

#include "core/errors.h"
#include "tests/experiments/data/idx_test_util.h"

namespace batchlab::data {
namespace {

using testing::idx_bytes;
using testing::ScratchDir;
using testing::write_gz;
using testing::write_raw;

// Runs `fn`, expects a DataError, and checks its message contains every fragment.
void expect_data_error(const std::function<void()>& fn,
                       std::initializer_list<std::string> fragments) {
  try {
    fn();
    ADD_FAILURE() << "expected a DataError";
  } catch (const DataError& e) {
    const std::string message = e.what();
    for (const auto& f : fragments) {
      EXPECT_NE(message.find(f), std::string::npos) << "'" << f << "' not in: " << message;
    }
  }
}

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>((i * 37 + 11) % 256);
  return v;
}

torch::Tensor as_tensor(const std::vector<uint8_t>& v) {
  return torch::from_blob(const_cast<uint8_t*>(v.data()), {static_cast<int64_t>(v.size())},
                          torch::kUInt8)
      .clone();
}

TEST(IdxReader, ReadsRawLabelsExactly) {
  ScratchDir dir;
  const std::vector<uint8_t> labels = {0, 9, 3, 255, 7};
  write_raw(dir.file("labels-idx1-ubyte"), idx_bytes({5}, labels));

  const torch::Tensor raw = read_idx(dir.file("labels-idx1-ubyte"));
  EXPECT_EQ(raw.scalar_type(), torch::kUInt8);
  EXPECT_EQ(raw.sizes(), (std::vector<int64_t>{5}));
  EXPECT_TRUE(torch::equal(raw, as_tensor(labels)));

  const torch::Tensor as_labels = read_idx_labels(dir.file("labels-idx1-ubyte"));
  EXPECT_EQ(as_labels.scalar_type(), torch::kLong);
  EXPECT_EQ(as_labels[3].item<int64_t>(), 255);
}

TEST(IdxReader, ReadsGzipImagesExactly) {
  ScratchDir dir;
  const std::vector<uint8_t> pixels = pattern(3 * 4 * 5);
  write_gz(dir.file("images-idx3-ubyte.gz"), idx_bytes({3, 4, 5}, pixels));

  const torch::Tensor raw = read_idx(dir.file("images-idx3-ubyte.gz"));
  EXPECT_EQ(raw.sizes(), (std::vector<int64_t>{3, 4, 5}));
  EXPECT_TRUE(torch::equal(raw.flatten(), as_tensor(pixels)));
  // Row-major order: element [i][y][x] is byte (i*4 + y)*5 + x.
  EXPECT_EQ(raw[2][1][3].item<uint8_t>(), pixels[(2 * 4 + 1) * 5 + 3]);

  const torch::Tensor images = read_idx_images(dir.file("images-idx3-ubyte.gz"));
  EXPECT_EQ(images.scalar_type(), torch::kUInt8);
  EXPECT_EQ(images.sizes(), (std::vector<int64_t>{3, 1, 4, 5}));
  EXPECT_TRUE(torch::equal(images.squeeze(1), raw));
}

TEST(IdxReader, ReadsGzipLabelsAndRawImages) {
  ScratchDir dir;
  const std::vector<uint8_t> labels = {1, 2, 3, 4};
  const std::vector<uint8_t> pixels = pattern(4 * 2 * 3);
  write_gz(dir.file("l.gz"), idx_bytes({4}, labels));
  write_raw(dir.file("i"), idx_bytes({4, 2, 3}, pixels));
  EXPECT_TRUE(torch::equal(read_idx_labels(dir.file("l.gz")), as_tensor(labels).to(torch::kLong)));
  EXPECT_TRUE(torch::equal(read_idx_images(dir.file("i")).flatten(), as_tensor(pixels)));
}

TEST(IdxReader, ReadsPayloadsLargerThanOneChunk) {
  // 16 MiB chunks: this payload needs two reads and ends mid-chunk.
  ScratchDir dir;
  const size_t n = (size_t{1} << 24) + 4097;
  const std::vector<uint8_t> data = pattern(n);
  write_raw(dir.file("big"), idx_bytes({static_cast<uint32_t>(n)}, data));
  EXPECT_TRUE(torch::equal(read_idx(dir.file("big")), as_tensor(data)));
}

TEST(IdxReader, TruncatedDataNamesFileAndByteCounts) {
  ScratchDir dir;
  const auto bytes = idx_bytes({10, 4, 4}, pattern(100));  // dims say 160 bytes
  write_raw(dir.file("short"), bytes);
  write_gz(dir.file("short.gz"), bytes);
  for (const std::string name : {"short", "short.gz"}) {
    expect_data_error([&] { read_idx(dir.file(name)); },
                      {dir.file(name), "truncated data", "need 160 bytes, got 100", "re-download"});
  }
}

// Found by fuzz/idx_fuzz.cpp (fuzz/corpus/idx/timeout-4g-labels-in-10-bytes): 10 bytes whose
// header claims 4,261,412,866 labels. The tensor was allocated before the data was read: 10 s and
// 1 GB under the sanitizers. Now the claim is checked against the file's size first.
TEST(IdxReader, AHeaderClaimingMoreThanTheFileCanHoldIsRefusedBeforeAllocating) {
  ScratchDir dir;
  write_raw(dir.file("claims"), {0x0, 0x0, 0x8, 0x1, 0xfe, 0x0, 0x0, 0x2, 0x3, 0x7});
  expect_data_error([&] { read_idx(dir.file("claims")); },
                    {dir.file("claims"), "truncated data", "need 4261412866 bytes, got 2"});
  write_gz(dir.file("claims.gz"), {0x0, 0x0, 0x8, 0x1, 0xfe, 0x0, 0x0, 0x2, 0x3, 0x7});
  expect_data_error([&] { read_idx(dir.file("claims.gz")); },
                    {dir.file("claims.gz"), "truncated data",
                     "need 4261412866 bytes, more than a "
                     "gzip file of"});
}

// Found by fuzz/idx_fuzz.cpp (fuzz/corpus/idx/crash-zero-dim-with-huge-dims): a 0 among the dims
// made the size check pass while the others overflowed, and LibTorch threw a c10::Error.
TEST(IdxReader, HugeDimsBesideAZeroAreAHeaderError) {
  ScratchDir dir;
  write_raw(dir.file("zero"), {0x0,  0x0,  0x8,  0x3,  0x0,  0x0,  0x0, 0x0, 0xff, 0xff,
                               0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0, 0x0, 0x0,  0x7});
  expect_data_error([&] { read_idx(dir.file("zero")); },
                    {dir.file("zero"), "declares dims [0, 4294967295, 4294967295]", "limit"});
}

TEST(IdxReader, TruncatedGzipStreamIsReportedAsTruncated) {
  ScratchDir dir;
  write_gz(dir.file("full.gz"), idx_bytes({64, 16, 16}, pattern(64 * 16 * 16)));
  std::vector<uint8_t> gz = testing::read_raw(dir.file("full.gz"));
  gz.resize(gz.size() / 2);  // cut the compressed file in half
  write_raw(dir.file("cut.gz"), gz);
  expect_data_error([&] { read_idx(dir.file("cut.gz")); },
                    {dir.file("cut.gz"), "truncated", "gzip stream ends early"});
}

TEST(IdxReader, TruncatedHeader) {
  ScratchDir dir;
  write_raw(dir.file("empty"), {});
  expect_data_error([&] { read_idx(dir.file("empty")); },
                    {dir.file("empty"), "truncated header", "got 0 bytes"});
  write_raw(dir.file("dims"), {0, 0, 8, 3, 0, 0, 0, 1});  // 3 dims declared, 1 present
  expect_data_error([&] { read_idx(dir.file("dims")); },
                    {dir.file("dims"), "truncated header", "3 dimensions need 12 bytes, got 4"});
}

TEST(IdxReader, BadMagic) {
  ScratchDir dir;
  write_raw(dir.file("text"), {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'});
  expect_data_error([&] { read_idx(dir.file("text")); },
                    {dir.file("text"), "bad magic number 0x68656c6c", "not an IDX file"});
}

TEST(IdxReader, UnsupportedTypeCode) {
  ScratchDir dir;
  write_raw(dir.file("floats"), idx_bytes({2}, std::vector<uint8_t>(8, 0), 0x0D));
  expect_data_error([&] { read_idx(dir.file("floats")); },
                    {dir.file("floats"), "unsupported IDX type code 0x0d (float32)", "0x08"});
}

TEST(IdxReader, ZeroDimensions) {
  ScratchDir dir;
  write_raw(dir.file("scalar"), {0, 0, 8, 0, 42});
  expect_data_error([&] { read_idx(dir.file("scalar")); }, {dir.file("scalar"), "0 dimensions"});
}

TEST(IdxReader, TrailingGarbage) {
  ScratchDir dir;
  auto bytes = idx_bytes({2, 2}, {1, 2, 3, 4});
  bytes.insert(bytes.end(), {9, 9, 9});
  write_gz(dir.file("long.gz"), bytes);
  expect_data_error([&] { read_idx(dir.file("long.gz")); },
                    {dir.file("long.gz"), "trailing garbage: 3 bytes after the 4 bytes"});
}

TEST(IdxReader, TooLargeDims) {
  ScratchDir dir;
  write_raw(dir.file("huge"), idx_bytes({65536, 65536, 65536}, {}));
  expect_data_error([&] { read_idx(dir.file("huge")); },
                    {dir.file("huge"), "65536, 65536, 65536", "16 GiB limit", "corrupt"});
}

TEST(IdxReader, MissingFileAndDirectory) {
  ScratchDir dir;
  expect_data_error([&] { read_idx(dir.file("nope.gz")); }, {dir.file("nope.gz"), "not found"});
  expect_data_error([&] { read_idx(dir.path.string()); },
                    {dir.path.string(), "not a regular file"});
}

TEST(IdxReader, WrongRankForImagesOrLabels) {
  ScratchDir dir;
  write_raw(dir.file("labels"), idx_bytes({3}, {1, 2, 3}));
  write_raw(dir.file("images"), idx_bytes({1, 2, 2}, {1, 2, 3, 4}));
  expect_data_error(
      [&] { read_idx_images(dir.file("labels")); },
      {dir.file("labels"), "expected an IDX image file with 3 dims", "got 1 dims [3]"});
  expect_data_error([&] { read_idx_labels(dir.file("images")); },
                    {dir.file("images"), "expected an IDX label file with 1 dim", "[1, 2, 2]"});
}

TEST(IdxReader, EmptyPayloadIsAnEmptyTensor) {
  ScratchDir dir;
  write_gz(dir.file("none.gz"), idx_bytes({0, 28, 28}, {}));
  EXPECT_EQ(read_idx_images(dir.file("none.gz")).sizes(), (std::vector<int64_t>{0, 1, 28, 28}));
}

}  // namespace
}  // namespace batchlab::data
