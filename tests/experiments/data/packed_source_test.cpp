#include "experiments/data/packed_source.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <set>

#include "core/errors.h"
#include "core/train/validation_split.h"
#include "experiments/data/batch_loader.h"
#include "experiments/data/image_folder.h"
#include "experiments/data/packed_writer.h"
#include "tests/experiments/data/image_test_util.h"

namespace batchlab::data {
namespace {

using testing::class_blue;
using testing::make_image_folder;
using testing::ScratchDir;
namespace fs = std::filesystem;

class PackedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // 2 classes x 5 training and 2 validation images of about 60 x 44.
    make_image_folder(dir_ / "src", {"ant", "bee"}, 5, 2);
  }
  PackReport pack(const std::string& out, PackFormat format, double shard_mb = 256.0,
                  int64_t workers = 2) {
    PackOptions o;
    o.size = 24;
    o.format = format;
    o.shard_mb = shard_mb;
    o.workers = workers;
    return pack_image_folder(dir_ / "src", out, o);
  }
  ScratchDir dir_;
};

TEST_F(PackedTest, RawRoundTripKeepsOrderLabelsClassesAndResizedPixels) {
  const PackReport report = pack(dir_ / "raw", PackFormat::raw);
  EXPECT_EQ(report.train, 10);
  EXPECT_EQ(report.val, 4);
  EXPECT_EQ(report.shards, 2);  // one per split
  EXPECT_TRUE(report.skipped.empty());
  ASSERT_TRUE(is_packed_dataset(dir_ / "raw"));
  EXPECT_FALSE(is_packed_dataset(dir_ / "src"));

  PackedImageSource packed(dir_ / "raw", false);
  FolderImageSource folder(scan_image_folder(dir_ / "src"));
  EXPECT_EQ(packed.class_names(), (std::vector<std::string>{"ant", "bee"}));
  ASSERT_EQ(packed.size(Split::train), 10);
  ASSERT_EQ(packed.size(Split::test), 4);
  auto packed_reader = packed.make_reader();
  auto folder_reader = folder.make_reader();
  ResampleScratch scratch;
  for (int64_t i = 0; i < 10; ++i) {
    EXPECT_EQ(packed.label(Split::train, i), folder.label(Split::train, i));
    // The stored sample is the folder image resized to shorter side 24 with the same resampler.
    const JpegHeader full = folder_reader->open(Split::train, i);
    const auto [w, h] = packed_dimensions(full.width, full.height, 24);
    const JpegHeader stored = packed_reader->open(Split::train, i);
    ASSERT_EQ(stored.width, w);
    ASSERT_EQ(stored.height, h);
    EXPECT_EQ(std::min(stored.width, stored.height), 24);
    const ImageView src =
        folder_reader->pixels({0, 0, double(full.width), double(full.height)}, w, h);
    std::vector<uint8_t> expected(static_cast<size_t>(w * h * 3));
    resample_crop(src, {0, 0, double(src.width), double(src.height)}, w, h, false, PixelLayout::hwc,
                  expected.data(), scratch);
    const ImageView got = packed_reader->pixels({0, 0, double(w), double(h)}, 16, 16);
    ASSERT_TRUE(std::equal(expected.begin(), expected.end(), got.pixels)) << "sample " << i;
  }
}

TEST_F(PackedTest, PackedBatchesMatchTheirLabelsAndAreIndependentOfWorkers) {
  pack(dir_ / "jpeg", PackFormat::jpeg, 256.0, /*workers=*/1);
  pack(dir_ / "jpeg4", PackFormat::jpeg, 256.0, /*workers=*/4);
  // The pack itself does not depend on the number of packing threads.
  EXPECT_EQ(testing::read_bytes(dir_ / "jpeg/train-00000.shard"),
            testing::read_bytes(dir_ / "jpeg4/train-00000.shard"));
  auto source = std::make_shared<PackedImageSource>(dir_ / "jpeg", false);
  TransformSpec spec;
  spec.image_size = 16;
  spec.eval_resize = 18;
  BatchLoader one(source, spec, {1, 4, false, true});
  BatchLoader four(source, spec, {4, 4, false, true});
  const auto order = torch::tensor({9, 0, 4, 5, 2}, torch::kInt64);
  const auto a = one.load(Split::train, order, 3);
  EXPECT_TRUE(torch::equal(a.images, four.load(Split::train, order, 3).images));
  for (int64_t k = 0; k < 5; ++k) {
    const int64_t label = a.labels[k].item<int64_t>();
    EXPECT_EQ(label, order[k].item<int64_t>() / 5);
    EXPECT_NEAR(a.images[k][2].to(torch::kFloat).mean().item<double>(), class_blue(label), 8.0);
  }
}

TEST_F(PackedTest, SmallShardLimitSplitsSamplesOverSeveralShards) {
  // A raw 24 x ~33 sample is about 2.4 KB; 5 KB shards hold two.
  const PackReport report = pack(dir_ / "many", PackFormat::raw, 5.0 / 1024.0);
  EXPECT_GT(report.shards, 5);
  PackedImageSource packed(dir_ / "many", false);
  std::set<uint32_t> shards;
  for (int64_t i = 0; i < 10; ++i) shards.insert(packed.sample(Split::train, i).shard);
  EXPECT_GT(shards.size(), 3u);
  auto reader = packed.make_reader();
  for (int64_t i = 0; i < 10; ++i) EXPECT_NO_THROW(reader->open(Split::train, i));
}

TEST_F(PackedTest, TruncatedShardIsNamedOnOpenOrSkippedAndCounted) {
  pack(dir_ / "p", PackFormat::raw);
  const std::string shard = dir_ / "p/train-00000.shard";
  fs::resize_file(shard, fs::file_size(shard) - 100);
  try {
    PackedImageSource packed(dir_ / "p", false);
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(shard), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
  // Skipping: the pack opens; every sample of the damaged shard is unreadable, so training batches
  // cannot be built (all of the split is in that shard) while validation still reads.
  auto packed = std::make_shared<PackedImageSource>(dir_ / "p", true);
  ASSERT_EQ(packed->shard_problems().size(), 1u);
  TransformSpec spec;
  spec.image_size = 16;
  spec.eval_resize = 18;
  BatchLoader loader(packed, spec, {2, 4, /*skip_corrupt=*/true, true});
  EXPECT_NO_THROW(loader.load(Split::test, torch::arange(4, torch::kInt64), std::nullopt));
  try {
    loader.load(Split::train, torch::arange(3, torch::kInt64), 1);
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("unreadable"), std::string::npos) << e.what();
  }
  EXPECT_EQ(loader.skipped_count(), 10);
  EXPECT_NE(loader.skipped_messages()[0].find(shard), std::string::npos);
}

TEST_F(PackedTest, ChecksumMismatchIsFoundOnFirstReadAndNamesTheShard) {
  pack(dir_ / "p", PackFormat::raw, 5.0 / 1024.0);
  // Flip one byte in the middle of the second training shard (same size: open succeeds).
  const std::string shard = dir_ / "p/train-00001.shard";
  auto bytes = testing::read_bytes(shard);
  bytes[bytes.size() / 2] ^= 0x5a;
  testing::write_bytes(shard, bytes);
  PackedImageSource packed(dir_ / "p", false);
  auto reader = packed.make_reader();
  EXPECT_NO_THROW(reader->open(Split::train, 0));  // shard 0 is intact
  int64_t failures = 0;
  for (int64_t i = 0; i < 10; ++i) {
    if (packed.sample(Split::train, i).shard != 1) continue;
    try {
      reader->open(Split::train, i);
    } catch (const DataError& e) {
      ++failures;
      EXPECT_NE(std::string(e.what()).find(shard), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(failures, 0);
}

TEST_F(PackedTest, DamagedIndexAndExistingPackAreErrors) {
  pack(dir_ / "p", PackFormat::raw);
  const std::string index = dir_ / "p/pack.index";
  auto bytes = testing::read_bytes(index);
  testing::write_bytes(index, std::vector<uint8_t>(bytes.begin(), bytes.end() - 9));
  try {
    read_pack_index(dir_ / "p");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(index), std::string::npos) << e.what();
  }
  testing::write_bytes(index, bytes);
  EXPECT_NO_THROW(read_pack_index(dir_ / "p"));
  // Packing into a directory that already holds a pack is refused.
  EXPECT_THROW(pack(dir_ / "p", PackFormat::raw), InputError);
}

TEST_F(PackedTest, CorruptSourceImagesStopThePackUnlessSkipped) {
  const std::string bad = dir_ / "src/train/bee/img_1.JPEG";
  testing::write_bytes(bad, {0xff, 0xd8, 0xff, 0xe0, 1, 2});
  try {
    pack(dir_ / "p", PackFormat::raw);
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
  }
  PackOptions o;
  o.size = 24;
  o.workers = 3;
  o.skip_corrupt = true;
  const PackReport report = pack_image_folder(dir_ / "src", dir_ / "q", o);
  EXPECT_EQ(report.train, 9);
  ASSERT_EQ(report.skipped.size(), 1u);
  EXPECT_NE(report.skipped[0].find(bad), std::string::npos);
  PackedImageSource packed(dir_ / "q", false);
  EXPECT_EQ(packed.label(Split::train, 5), 1);  // bee/img_0; bee/img_1 left out
  EXPECT_EQ(packed.label(Split::train, 6), 1);
}

TEST(PackedDimensions, ShorterSideBecomesTheSizeAndSmallImagesStay) {
  EXPECT_EQ(packed_dimensions(500, 375, 256), (std::pair<int64_t, int64_t>{341, 256}));
  EXPECT_EQ(packed_dimensions(375, 500, 256), (std::pair<int64_t, int64_t>{256, 341}));
  EXPECT_EQ(packed_dimensions(300, 300, 160), (std::pair<int64_t, int64_t>{160, 160}));
  EXPECT_EQ(packed_dimensions(200, 120, 160), (std::pair<int64_t, int64_t>{200, 120}));
}

TEST_F(PackedTest, HeldOutValidationImagesAreTrainingSamplesOfThePack) {
  pack(dir_ / "jpeg", PackFormat::jpeg);
  auto packed = std::make_shared<PackedImageSource>(dir_ / "jpeg", false);
  // The pack's own "val" is the test split; it holds out nothing by itself.
  EXPECT_EQ(packed->size(Split::val), 0);
  auto source = hold_out_validation(packed, 3);
  ASSERT_EQ(source->size(Split::train), 7);
  ASSERT_EQ(source->size(Split::val), 3);
  ASSERT_EQ(source->size(Split::test), 4);
  EXPECT_EQ(hold_out_validation(packed, 0), packed);
  const train::ValidationSplit split(10, 3, "pack");
  LoaderOptions o;
  o.workers = 2;
  BatchLoader loader(source, TransformSpec{24, 28, 0.08}, o);
  BatchLoader direct(packed, TransformSpec{24, 28, 0.08}, LoaderOptions{});
  const auto val = loader.load(Split::val, torch::arange(3, torch::kInt64), std::nullopt);
  const auto expected =
      direct.load(Split::train, torch::tensor(split.held_out(), torch::kInt64), std::nullopt);
  EXPECT_TRUE(val.images.equal(expected.images));
  EXPECT_TRUE(val.labels.equal(expected.labels));
  for (int64_t i = 0; i < 7; ++i) {
    const int64_t stored = split.to_stored(Split::train, i);
    EXPECT_EQ(source->location(Split::train, i), packed->location(Split::train, stored));
    EXPECT_EQ(source->label(Split::train, i), packed->label(Split::train, stored));
  }
  EXPECT_THROW(hold_out_validation(packed, 10), InputError);
}

}  // namespace
}  // namespace batchlab::data
