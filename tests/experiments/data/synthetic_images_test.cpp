#include "experiments/data/synthetic_images.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

#include "core/errors.h"
#include "experiments/data/image_dataset.h"

namespace batchlab::data {
namespace {

TEST(SyntheticImages, ShapesTypesAndLabels) {
  const ImageDataset ds = make_synthetic_images(300, 100, 7);
  EXPECT_EQ(ds.name, "synthetic");
  EXPECT_EQ(ds.train_images.sizes(), (std::vector<int64_t>{300, 1, 28, 28}));
  EXPECT_EQ(ds.test_images.sizes(), (std::vector<int64_t>{100, 1, 28, 28}));
  EXPECT_EQ(ds.train_images.scalar_type(), torch::kUInt8);
  EXPECT_EQ(ds.train_labels.scalar_type(), torch::kLong);
  EXPECT_EQ(ds.train_labels.sizes(), (std::vector<int64_t>{300}));
  EXPECT_EQ(ds.num_classes, 10);
  EXPECT_EQ(ds.class_names.size(), 10u);
  EXPECT_GE(ds.train_labels.min().item<int64_t>(), 0);
  EXPECT_LE(ds.train_labels.max().item<int64_t>(), 9);
  // Every class occurs, roughly uniformly (expected 30 each).
  const torch::Tensor counts = torch::bincount(ds.train_labels, {}, 10);
  EXPECT_GE(counts.min().item<int64_t>(), 10);
  // Images use the range: dark background, bright strokes.
  EXPECT_LT(ds.train_images.to(torch::kFloat).mean().item<float>(), 100.0f);
  EXPECT_GE(ds.train_images.max().item<uint8_t>(), 250);
  ASSERT_EQ(ds.mean.size(), 1u);
  EXPECT_GT(ds.stddev[0], 0.05);
}

TEST(SyntheticImages, SameSeedSameTensorsOtherSeedOtherTensors) {
  const ImageDataset a = make_synthetic_images(200, 50, 3);
  const ImageDataset b = make_synthetic_images(200, 50, 3);
  const ImageDataset c = make_synthetic_images(200, 50, 4);
  EXPECT_TRUE(torch::equal(a.train_images, b.train_images));
  EXPECT_TRUE(torch::equal(a.train_labels, b.train_labels));
  EXPECT_TRUE(torch::equal(a.test_images, b.test_images));
  EXPECT_TRUE(torch::equal(a.test_labels, b.test_labels));
  EXPECT_FALSE(torch::equal(a.train_images, c.train_images));
  EXPECT_FALSE(torch::equal(a.test_images, c.test_images));
  // Train and test are different samples.
  EXPECT_FALSE(torch::equal(a.train_images.narrow(0, 0, 50), a.test_images));
}

TEST(SyntheticImages, SmallerSizeIsAPrefix) {
  const ImageDataset small = make_synthetic_images(64, 16, 5);
  const ImageDataset large = make_synthetic_images(128, 32, 5);
  EXPECT_TRUE(torch::equal(small.train_images, large.train_images.narrow(0, 0, 64)));
  EXPECT_TRUE(torch::equal(small.test_labels, large.test_labels.narrow(0, 0, 16)));
}

TEST(SyntheticImages, PinnedValues) {
  // Portable generator: these numbers must not change across machines or LibTorch versions. If the
  // generator is changed on purpose, update them (and expect synthetic-data results to move).
  const ImageDataset ds = make_synthetic_images(8, 0, 0);
  EXPECT_TRUE(torch::equal(ds.train_labels, torch::tensor({6, 8, 1, 7, 8, 1, 8, 7}, torch::kLong)))
      << ds.train_labels;
  EXPECT_EQ(ds.train_images.to(torch::kLong).sum().item<int64_t>(), 325757);
  EXPECT_EQ(ds.train_images[3][0][14][14].item<uint8_t>(), 75);
}

TEST(SyntheticImages, OtherShapes) {
  SyntheticImageOptions o;
  o.channels = 3;
  o.height = 16;
  o.width = 20;
  o.num_classes = 4;
  const ImageDataset ds = make_synthetic_images(10, 5, 1, o);
  EXPECT_EQ(ds.train_images.sizes(), (std::vector<int64_t>{10, 3, 16, 20}));
  EXPECT_EQ(ds.num_classes, 4);
  EXPECT_LE(ds.train_labels.max().item<int64_t>(), 3);
  EXPECT_EQ(ds.mean.size(), 3u);
}

TEST(SyntheticImages, RejectsBadArguments) {
  EXPECT_THROW(make_synthetic_images(-1, 10, 0), InputError);
  SyntheticImageOptions o;
  o.num_classes = 1;
  EXPECT_THROW(make_synthetic_images(10, 10, 0, o), InputError);
}

TEST(ImageDataset, SyntheticThroughTheConfig) {
  config::DataConfig cfg;
  cfg.dataset = "synthetic";
  const ImageDataset defaults = load_image_dataset(cfg);
  EXPECT_EQ(defaults.train_images.size(0), 4096);
  EXPECT_EQ(defaults.test_images.size(0), 1024);

  cfg.train_size = 256;
  cfg.test_size = 64;
  cfg.path = "/ignored";
  const ImageDataset small = load_image_dataset(cfg);
  EXPECT_EQ(small.train_images.size(0), 256);
  EXPECT_EQ(small.test_images.size(0), 64);
  EXPECT_TRUE(torch::equal(small.train_images, defaults.train_images.narrow(0, 0, 256)));
}

TEST(ImageDataset, UnknownDatasetListsValidNames) {
  config::DataConfig cfg;
  cfg.dataset = "cifar100";
  try {
    load_image_dataset(cfg);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "data.dataset = \"cifar100\": unknown image dataset; valid: cifar10, "
                 "fashion_mnist, synthetic");
  }
  EXPECT_EQ(image_dataset_names(),
            (std::vector<std::string>{"cifar10", "fashion_mnist", "synthetic"}));
}

TEST(ImageDataset, NegativeSizeIsAnInternalError) {
  // The schema rejects it when the config is read; here it means validation was skipped.
  config::DataConfig cfg;
  cfg.dataset = "synthetic";
  cfg.test_size = -5;
  try {
    load_image_dataset(cfg);
    ADD_FAILURE() << "expected an internal error";
  } catch (const InputError& e) {
    ADD_FAILURE() << "reported as bad input: " << e.what();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("internal error"), std::string::npos) << e.what();
  }
}

TEST(SyntheticImages, ConfiguredShapeFromTheDataKeys) {
  // data.synthetic_*: an RGB shape with many classes (ImageNet's is 3 x 224 x 224, 1000).
  config::DataConfig data;
  data.dataset = "synthetic";
  data.train_size = 24;
  data.test_size = 8;
  data.synthetic_channels = 3;
  data.synthetic_size = 64;
  data.synthetic_classes = 100;
  const ImageDataset ds = load_image_dataset(data);
  EXPECT_EQ(ds.train_images.sizes(), (std::vector<int64_t>{24, 3, 64, 64}));
  EXPECT_EQ(ds.test_images.sizes(), (std::vector<int64_t>{8, 3, 64, 64}));
  EXPECT_EQ(ds.num_classes, 100);
  EXPECT_EQ(ds.mean.size(), 3u);
  EXPECT_GE(ds.train_labels.min().item<int64_t>(), 0);
  EXPECT_LT(ds.train_labels.max().item<int64_t>(), 100);
  // Not a constant image: the prototypes are drawn.
  EXPECT_GT(ds.train_images.to(torch::kFloat).std().item<double>(), 10.0);
}

TEST(SyntheticImages, SameImagesAtAnyThreadCount) {
  SyntheticImageOptions o;
  o.channels = 3;
  o.height = o.width = 48;
  o.num_classes = 50;
  const int saved = at::get_num_threads();
  at::set_num_threads(1);
  const ImageDataset one = make_synthetic_images(16, 4, 9, o);
  at::set_num_threads(2);
  const ImageDataset two = make_synthetic_images(16, 4, 9, o);
  at::set_num_threads(saved);
  EXPECT_TRUE(torch::equal(one.train_images, two.train_images));
  EXPECT_TRUE(torch::equal(one.train_labels, two.train_labels));
  EXPECT_TRUE(torch::equal(one.test_images, two.test_images));
}

TEST(ImageDataset, NormalizeImages) {
  const ImageDataset ds = make_synthetic_images(512, 0, 2);
  const torch::Tensor x = normalize_images(ds.train_images, ds);
  EXPECT_EQ(x.scalar_type(), torch::kFloat);
  EXPECT_EQ(x.sizes(), ds.train_images.sizes());
  // Normalized with the split's own statistics: mean 0, std 1.
  EXPECT_NEAR(x.mean().item<double>(), 0.0, 1e-4);
  EXPECT_NEAR(x.std(/*unbiased=*/false).item<double>(), 1.0, 1e-4);
}

}  // namespace
}  // namespace batchlab::data
