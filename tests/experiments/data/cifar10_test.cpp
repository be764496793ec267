#include "experiments/data/cifar10.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/errors.h"
#include "tests/experiments/data/image_test_util.h"

namespace batchlab::data {
namespace {

using testing::ScratchDir;
using testing::write_bytes;

// `n` records; record r has label (r + first) % 10 and pixel i = (r + i) % 251 (planar R, G, B).
std::vector<uint8_t> cifar_records(int64_t n, int64_t first) {
  std::vector<uint8_t> out;
  for (int64_t r = 0; r < n; ++r) {
    out.push_back(static_cast<uint8_t>((r + first) % 10));
    for (int64_t i = 0; i < 3072; ++i) out.push_back(static_cast<uint8_t>((r + first + i) % 251));
  }
  return out;
}

void write_cifar_dir(const ScratchDir& dir, int64_t per_file = 4) {
  for (int i = 1; i <= 5; ++i) {
    write_bytes(dir / ("data_batch_" + std::to_string(i) + ".bin"),
                cifar_records(per_file, (i - 1) * per_file));
  }
  write_bytes(dir / "test_batch.bin", cifar_records(3, 100));
}

TEST(Cifar10, ReadsRecordsLabelsAndPlanarPixels) {
  ScratchDir dir;
  write_cifar_dir(dir);
  const std::string meta = "plane\ncar\nbird\ncat\ndeer\ndog\nfrog\nhorse\nship\ntruck\n\n";
  write_bytes(dir / "batches.meta.txt", std::vector<uint8_t>(meta.begin(), meta.end()));
  const ImageDataset ds = load_cifar10(dir.path.string());
  EXPECT_EQ(ds.name, "cifar10");
  EXPECT_EQ(ds.train_images.sizes(), (std::vector<int64_t>{20, 3, 32, 32}));
  EXPECT_EQ(ds.test_images.sizes(), (std::vector<int64_t>{3, 3, 32, 32}));
  EXPECT_EQ(ds.num_classes, 10);
  EXPECT_EQ(ds.class_names[1], "car");
  // Record 7 (second file, record 3): label 7; pixel (c, y, x) is byte 1 + c*1024 + y*32 + x.
  EXPECT_EQ(ds.train_labels[7].item<int64_t>(), 7);
  EXPECT_EQ(ds.train_images[7][0][0][0].item<uint8_t>(), (7 + 0) % 251);
  EXPECT_EQ(ds.train_images[7][1][2][3].item<uint8_t>(), (7 + 1024 + 2 * 32 + 3) % 251);
  EXPECT_EQ(ds.train_images[7][2][31][31].item<uint8_t>(), (7 + 3071) % 251);
  EXPECT_EQ(ds.test_labels[0].item<int64_t>(), 0);  // (0 + 100) % 10
  ASSERT_EQ(ds.mean.size(), 3u);
  EXPECT_GT(ds.stddev[0], 0.1);
}

TEST(Cifar10, MissingMetaFallsBackToTheStandardNames) {
  ScratchDir dir;
  write_cifar_dir(dir, 1);
  const ImageDataset ds = load_cifar10(dir.path.string());
  EXPECT_EQ(ds.class_names, cifar10_class_names());
  EXPECT_EQ(ds.class_names[9], "truck");
}

TEST(Cifar10, TruncatedFileNamesTheFileAndTheRecord) {
  ScratchDir dir;
  write_cifar_dir(dir);
  auto bytes = cifar_records(4, 0);
  bytes.resize(bytes.size() - 100);  // record 3 loses 100 bytes
  write_bytes(dir / "data_batch_3.bin", bytes);
  try {
    load_cifar10(dir.path.string());
    FAIL();
  } catch (const DataError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("data_batch_3.bin"), std::string::npos) << m;
    EXPECT_NE(m.find("record 3"), std::string::npos) << m;
  }
}

TEST(Cifar10, BadLabelMissingFileAndEmptyPathAreErrors) {
  ScratchDir dir;
  write_cifar_dir(dir);
  auto bytes = cifar_records(2, 0);
  bytes[3073] = 12;  // record 1's label
  write_bytes(dir / "test_batch.bin", bytes);
  try {
    load_cifar10(dir.path.string());
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("test_batch.bin: record 1 has label 12"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove(dir / "data_batch_5.bin");
  try {
    load_cifar10(dir.path.string());
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("data_batch_5.bin"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_cifar10(""), InputError);
}

TEST(Cifar10, DispatchedByLoadImageDatasetWithSizeLimits) {
  ScratchDir dir;
  write_cifar_dir(dir);
  config::DataConfig data;
  data.dataset = "cifar10";
  data.path = dir.path.string();
  data.train_size = 6;
  const ImageDataset ds = load_image_dataset(data);
  EXPECT_EQ(ds.train_images.size(0), 6);
  EXPECT_EQ(ds.test_images.size(0), 3);
  data.test_size = 4;
  EXPECT_THROW(load_image_dataset(data), InputError);
}

}  // namespace
}  // namespace batchlab::data
