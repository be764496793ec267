// What `sweep plan` knows of a job's training examples (cli_plan_options().train_size): the count
// the trainer will train on, data.val_size held out as the trainer holds it out, so that a plan's
// steps per epoch and its pending run rows agree with the runs; the key to fix where a [data]
// section cannot work.
#include "cli/sweep_context.h"

#include <gtest/gtest.h>

#include "experiments/data/fashion_mnist.h"
#include "experiments/data/image_dataset.h"
#include "tests/experiments/data/idx_test_util.h"

namespace batchlab::cli {
namespace {

config::DataConfig data_of(const std::string& dataset, const std::string& path = "") {
  config::DataConfig data;
  data.dataset = dataset;
  data.path = path;
  return data;
}

TEST(SweepPlanTrainSize, TheValidationSplitIsHeldOutAsTheTrainerHoldsItOut) {
  const auto train_size = cli_plan_options().train_size;
  config::DataConfig data = data_of("synthetic");
  data.train_size = 16384;
  data.val_size = 2000;
  const auto size = train_size(data);
  EXPECT_EQ(size.samples, 14384) << "16,384 less the 2,000 validation images";
  EXPECT_EQ(size.samples, data::image_training_examples(data)) << "the trainer's count";
  EXPECT_TRUE(size.error.empty());
  data.val_size = 0;
  EXPECT_EQ(train_size(data).samples, 16384);
}

TEST(SweepPlanTrainSize, FashionMnistIsReadFromItsFolderAndBadSizesNameTheirKey) {
  data::testing::ScratchDir dir;
  data::testing::write_gz(dir.file(data::kFashionMnistTrainLabels),
                          data::testing::idx_bytes({6}, {1, 2, 3, 4, 5, 6}));
  const auto train_size = cli_plan_options().train_size;
  config::DataConfig data = data_of("fashion_mnist", dir.path.string());
  data.val_size = 2;
  EXPECT_EQ(train_size(data).samples, 4);
  data.train_size = 7;
  auto size = train_size(data);
  EXPECT_EQ(size.error_key, "data.train_size");
  EXPECT_EQ(size.error, "larger than the 6 training examples of fashion_mnist");
  data.train_size = 2;
  size = train_size(data);
  EXPECT_EQ(size.error_key, "data.val_size");
  EXPECT_EQ(size.error,
            "must be below the 2 training examples it is held out of, leaving some to train on");
  size = train_size(data_of("fashion_mnist", (dir.path / "none").string()));
  EXPECT_EQ(size.error_key, "data.path");
  EXPECT_NE(size.error.find("Fashion-MNIST files not found in"), std::string::npos) << size.error;
}

TEST(SweepPlanTrainSize, DatasetsOnlyLoadingCanMeasureStayUnknown) {
  const auto train_size = cli_plan_options().train_size;
  for (const char* dataset : {"text", "imagenet"}) {
    const auto size = train_size(data_of(dataset));
    EXPECT_FALSE(size.samples.has_value()) << dataset;
    EXPECT_TRUE(size.error.empty()) << dataset;
  }
  data::testing::ScratchDir dir;
  const auto cifar = train_size(data_of("cifar10", dir.path.string()));
  EXPECT_FALSE(cifar.samples.has_value()) << "no files yet: the run says what is missing";
  EXPECT_TRUE(cifar.error.empty());
}

}  // namespace
}  // namespace batchlab::cli
