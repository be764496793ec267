// The training split's size told without loading the data (data::image_training_examples), which
// `batchlab train` gives validation so the rules on the run length in steps run before anything
// loads (core/config/run_length.h): data.train_size applied, data.val_size held out, and nullopt
// wherever loading is needed to know, or will fail and say why.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "experiments/data/cifar10.h"
#include "experiments/data/fashion_mnist.h"
#include "experiments/data/image_dataset.h"
#include "tests/experiments/data/idx_test_util.h"

namespace batchlab::data {
namespace {

using testing::idx_bytes;
using testing::ScratchDir;
using testing::write_gz;

config::DataConfig data_of(const std::string& dataset, const std::string& path = "") {
  config::DataConfig data;
  data.dataset = dataset;
  data.path = path;
  return data;
}

TEST(TrainingExamples, SyntheticIsItsSizeLessTheValidationSplit) {
  config::DataConfig data = data_of("synthetic");
  EXPECT_EQ(image_training_examples(data), kSyntheticTrainSize);
  data.train_size = 512;
  data.val_size = 64;
  EXPECT_EQ(image_training_examples(data), 448);
  data.val_size = 512;  // nothing left to train on: the validation split refuses it
  EXPECT_EQ(image_training_examples(data), std::nullopt);
}

TEST(TrainingExamples, AKnownSplitGivesTrainSizeOfItLessTheValidationSplit) {
  config::DataConfig data = data_of("fashion_mnist");
  EXPECT_EQ(training_examples_of_split(60000, data), 60000);
  data.val_size = 2000;
  EXPECT_EQ(training_examples_of_split(60000, data), 58000);
  data.train_size = 16384;
  EXPECT_EQ(training_examples_of_split(60000, data), 14384);
  EXPECT_EQ(training_examples_of_split(10000, data), std::nullopt) << "train_size beyond it";
  data.val_size = 16384;
  EXPECT_EQ(training_examples_of_split(60000, data), std::nullopt) << "nothing left";
}

TEST(TrainingExamples, FashionMnistIsReadFromTheLabelHeader) {
  ScratchDir dir;
  write_gz(dir.file(kFashionMnistTrainLabels), idx_bytes({5}, {1, 2, 3, 4, 5}));
  config::DataConfig data = data_of("fashion_mnist", dir.path.string());
  EXPECT_EQ(image_training_examples(data), 5);
  data.train_size = 4;
  data.val_size = 1;
  EXPECT_EQ(image_training_examples(data), 3);
  data.train_size = 6;  // beyond the split: the loader says so
  EXPECT_EQ(image_training_examples(data), std::nullopt);
  EXPECT_EQ(image_training_examples(data_of("fashion_mnist", (dir.path / "none").string())),
            std::nullopt);
  if (std::filesystem::is_directory(kFashionMnistDefaultDir)) {
    EXPECT_EQ(image_training_examples(data_of("fashion_mnist")), 60000);
  }
}

TEST(TrainingExamples, Cifar10IsCountedFromTheFileSizes) {
  ScratchDir dir;
  for (int i = 1; i <= 5; ++i) {
    std::ofstream(dir.file("data_batch_" + std::to_string(i) + ".bin"), std::ios::binary)
        << std::string(static_cast<size_t>(2 * kCifarRecordBytes), '\0');
  }
  EXPECT_EQ(image_training_examples(data_of("cifar10", dir.path.string())), 10);
  std::ofstream(dir.file("data_batch_5.bin"), std::ios::binary) << "truncated";
  EXPECT_EQ(image_training_examples(data_of("cifar10", dir.path.string())), std::nullopt);
}

TEST(TrainingExamples, DatasetsOnlyLoadingCanMeasureAreUnknown) {
  EXPECT_EQ(image_training_examples(data_of("imagenet", "/data/imagenet")), std::nullopt);
  EXPECT_EQ(image_training_examples(data_of("text", "/data/shards")), std::nullopt);
}

}  // namespace
}  // namespace batchlab::data
