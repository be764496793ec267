#include "experiments/data/fashion_mnist.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <string>

#include "core/errors.h"
#include "tests/experiments/data/idx_test_util.h"

namespace batchlab::data {
namespace {

using testing::idx_bytes;
using testing::ScratchDir;
using testing::write_gz;

bool have_debian_files() { return std::filesystem::is_directory(kFashionMnistDefaultDir); }

std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const DataError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a DataError";
  return "";
}

// Writes a tiny Fashion-MNIST-shaped directory: `n_train` / `n_test` 2x2 images, labels as given.
void write_tiny(const ScratchDir& dir, const std::vector<uint8_t>& train_labels,
                int64_t n_train_images, const std::vector<uint8_t>& test_labels) {
  const auto n_test = static_cast<uint32_t>(test_labels.size());
  write_gz(dir.file(kFashionMnistTrainImages),
           idx_bytes({static_cast<uint32_t>(n_train_images), 2, 2},
                     std::vector<uint8_t>(static_cast<size_t>(n_train_images) * 4, 100)));
  write_gz(dir.file(kFashionMnistTrainLabels),
           idx_bytes({static_cast<uint32_t>(train_labels.size())}, train_labels));
  write_gz(dir.file(kFashionMnistTestImages),
           idx_bytes({n_test, 2, 2}, std::vector<uint8_t>(n_test * 4, 50)));
  write_gz(dir.file(kFashionMnistTestLabels), idx_bytes({n_test}, test_labels));
}

TEST(FashionMnist, LoadsTheDebianPackage) {
  if (!have_debian_files())
    GTEST_SKIP() << kFashionMnistDefaultDir << " absent (dataset-fashion-mnist)";
  const ImageDataset ds = load_fashion_mnist();

  EXPECT_EQ(ds.name, "fashion_mnist");
  EXPECT_EQ(ds.source, kFashionMnistDefaultDir);
  EXPECT_EQ(ds.train_images.sizes(), (std::vector<int64_t>{60000, 1, 28, 28}));
  EXPECT_EQ(ds.test_images.sizes(), (std::vector<int64_t>{10000, 1, 28, 28}));
  EXPECT_EQ(ds.train_images.scalar_type(), torch::kUInt8);
  EXPECT_EQ(ds.train_labels.sizes(), (std::vector<int64_t>{60000}));
  EXPECT_EQ(ds.test_labels.sizes(), (std::vector<int64_t>{10000}));
  EXPECT_EQ(ds.train_labels.scalar_type(), torch::kLong);

  EXPECT_EQ(ds.train_labels.min().item<int64_t>(), 0);
  EXPECT_EQ(ds.train_labels.max().item<int64_t>(), 9);
  // Fashion-MNIST is exactly balanced: 6000 training and 1000 test images per class.
  EXPECT_TRUE(
      torch::equal(torch::bincount(ds.train_labels), torch::full({10}, 6000, torch::kLong)));
  EXPECT_TRUE(torch::equal(torch::bincount(ds.test_labels), torch::full({10}, 1000, torch::kLong)));

  EXPECT_EQ(ds.num_classes, 10);
  ASSERT_EQ(ds.class_names.size(), 10u);
  EXPECT_EQ(ds.class_names.front(), "T-shirt/top");
  EXPECT_EQ(ds.class_names.back(), "Ankle boot");
  // The normalization constants everyone quotes for Fashion-MNIST.
  ASSERT_EQ(ds.mean.size(), 1u);
  EXPECT_NEAR(ds.mean[0], 0.2860, 5e-4);
  EXPECT_NEAR(ds.stddev[0], 0.3530, 5e-4);
  EXPECT_EQ(ds.train_images.max().item<uint8_t>(), 255);
}

TEST(FashionMnist, SizeLimitsKeepTheFirstSamples) {
  if (!have_debian_files())
    GTEST_SKIP() << kFashionMnistDefaultDir << " absent (dataset-fashion-mnist)";
  config::DataConfig cfg;
  cfg.dataset = "fashion_mnist";
  cfg.train_size = 1000;
  cfg.test_size = 300;
  const ImageDataset small = load_image_dataset(cfg);
  const ImageDataset full = load_fashion_mnist();
  EXPECT_EQ(small.train_images.size(0), 1000);
  EXPECT_EQ(small.test_labels.size(0), 300);
  EXPECT_TRUE(torch::equal(small.train_images, full.train_images.narrow(0, 0, 1000)));
  EXPECT_TRUE(torch::equal(small.test_labels, full.test_labels.narrow(0, 0, 300)));
  EXPECT_EQ(small.mean, full.mean);  // statistics of the whole training split

  cfg.train_size = 60001;
  try {
    load_image_dataset(cfg);
    ADD_FAILURE() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("data.train_size = 60001: larger than the 60000 training"),
              std::string::npos)
        << e.what();
  }
}

TEST(FashionMnist, MissingDirectorySaysHowToInstall) {
  ScratchDir dir;
  const std::string missing = dir.file("no-such-dir");
  const std::string msg = message_of([&] { load_fashion_mnist(missing); });
  EXPECT_NE(msg.find(missing), std::string::npos) << msg;
  EXPECT_NE(msg.find("dataset-fashion-mnist"), std::string::npos) << msg;
  EXPECT_NE(msg.find("scripts/setup.sh"), std::string::npos) << msg;
  EXPECT_NE(msg.find("data.path"), std::string::npos) << msg;
}

TEST(FashionMnist, MissingFileIsNamed) {
  ScratchDir dir;
  write_tiny(dir, {1, 2}, 2, {3});
  std::filesystem::remove(dir.file(kFashionMnistTestLabels));
  const std::string msg = message_of([&] { load_fashion_mnist(dir.path.string()); });
  EXPECT_NE(msg.find(dir.file(kFashionMnistTestLabels)), std::string::npos) << msg;
  EXPECT_NE(msg.find("dataset-fashion-mnist"), std::string::npos) << msg;
}

TEST(FashionMnist, ReadsUncompressedFilesToo) {
  ScratchDir dir;
  write_tiny(dir, {1, 2}, 2, {3});
  // Replace one .gz by its gunzipped form, as a manual download + gunzip leaves it.
  std::filesystem::remove(dir.file(kFashionMnistTrainLabels));
  testing::write_raw(dir.file("train-labels-idx1-ubyte"), idx_bytes({2}, {4, 5}));
  const ImageDataset ds = load_fashion_mnist(dir.path.string());
  EXPECT_EQ(ds.train_labels[1].item<int64_t>(), 5);
  EXPECT_EQ(ds.train_images.sizes(), (std::vector<int64_t>{2, 1, 2, 2}));
}

TEST(FashionMnist, ImageAndLabelCountsMustAgree) {
  ScratchDir dir;
  write_tiny(dir, {1, 2, 3}, 2, {3});
  const std::string msg = message_of([&] { load_fashion_mnist(dir.path.string()); });
  EXPECT_NE(msg.find("holds 2 images but"), std::string::npos) << msg;
  EXPECT_NE(msg.find("holds 3 labels"), std::string::npos) << msg;
}

TEST(FashionMnist, LabelsMustBeWithinTheClasses) {
  ScratchDir dir;
  write_tiny(dir, {1, 2}, 2, {10});
  const std::string msg = message_of([&] { load_fashion_mnist(dir.path.string()); });
  EXPECT_NE(msg.find(dir.file(kFashionMnistTestLabels)), std::string::npos) << msg;
  EXPECT_NE(msg.find("label 10 at index 0 is outside 0..9"), std::string::npos) << msg;
}

}  // namespace
}  // namespace batchlab::data
