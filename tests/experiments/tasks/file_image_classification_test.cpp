#include "experiments/tasks/file_image_classification.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/config/experiment_config.h"
#include "core/errors.h"
#include "core/train/trainer.h"
#include "core/train/validation_split.h"
#include "tests/experiments/data/image_test_util.h"

namespace batchlab::experiments {
namespace {

using data::testing::make_image_folder;
using data::testing::ScratchDir;

struct StepLosses : train::Reporter {
  std::vector<double> losses;
  std::vector<double> test_acc;
  void step(const train::StepRecord& r) override { losses.push_back(r.train_loss); }
  void eval(const train::EvalRecord& r) override { test_acc.push_back(r.test_acc.value()); }
};

config::DataConfig folder_data(const std::string& root, int64_t workers) {
  config::DataConfig d;
  d.dataset = "imagenet";
  d.path = root;
  d.image_size = 24;
  d.eval_resize = 28;
  d.workers = workers;
  d.prefetch = 3;
  d.augment = true;
  return d;
}

config::ModelConfig tiny_model() {
  config::ModelConfig m;
  m.arch = "small_resnet";
  m.width = 4;
  return m;
}

config::ExperimentConfig trainer_config() {
  config::ExperimentConfig c;
  c.batch.global = 8;
  c.batch.micro = 4;
  c.optim.name = "sgd";
  c.optim.base_lr = 0.05;
  c.optim.base_batch = 8;
  c.schedule.epochs = 2.0;
  c.train.eval_every = 1.0;
  c.data.seed = 5;
  c.data.eval_train_samples = 8;
  return c;
}

train::TrainerOptions trainer_options() {
  train::TrainerOptions o;
  o.eval_chunk = 4;
  return o;
}

class FileImageTaskTest : public ::testing::Test {
 protected:
  void SetUp() override { make_image_folder(dir_ / "root", {"a", "b", "c"}, 6, 3); }
  ScratchDir dir_;
};

TEST_F(FileImageTaskTest, NormalizesOnTheDeviceWithImagenetStatistics) {
  auto images = torch::tensor({0, 255, 124}, torch::kUInt8).view({1, 3, 1, 1});
  auto mean = torch::tensor({kImagenetMean[0], kImagenetMean[1], kImagenetMean[2]})
                  .view({1, 3, 1, 1})
                  .to(torch::kFloat);
  auto std = torch::tensor({kImagenetStd[0], kImagenetStd[1], kImagenetStd[2]})
                 .view({1, 3, 1, 1})
                 .to(torch::kFloat);
  auto out = normalize_uint8_images(images, mean, std);
  EXPECT_EQ(out.scalar_type(), torch::kFloat);
  EXPECT_NEAR(out[0][0][0][0].item<float>(), (0.0 - 0.485) / 0.229, 1e-5);
  EXPECT_NEAR(out[0][1][0][0].item<float>(), (1.0 - 0.456) / 0.224, 1e-5);
  EXPECT_NEAR(out[0][2][0][0].item<float>(), (124.0 / 255 - 0.406) / 0.225, 1e-5);
}

TEST_F(FileImageTaskTest, BatchesAreNormalizedUint8CropsWithFolderLabels) {
  torch::manual_seed(0);
  auto task = make_file_image_task(tiny_model(), folder_data(dir_ / "root", 2), 0, torch::kCPU);
  auto& file_task = dynamic_cast<FileImageClassificationTask&>(*task);
  EXPECT_EQ(task->size(train::Split::train), 18);
  EXPECT_EQ(task->size(train::Split::test), 9);
  const auto indices = torch::tensor({0, 7, 17}, torch::kInt64);
  const auto batch = task->make_batch(train::Split::train, indices, 42);
  EXPECT_EQ(batch.inputs.sizes(), (std::vector<int64_t>{3, 3, 24, 24}));
  EXPECT_EQ(batch.inputs.scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::equal(batch.targets, torch::tensor({0, 1, 2}, torch::kInt64)));
  // The same uint8 crops, normalized by hand.
  const auto raw = file_task.loader().load(train::Split::train, indices, 42);
  for (int64_t c = 0; c < 3; ++c) {
    const auto expected =
        (raw.images.select(1, c).to(torch::kFloat) / 255.0 - kImagenetMean[c]) / kImagenetStd[c];
    EXPECT_TRUE(torch::allclose(batch.inputs.select(1, c), expected, 1e-5, 1e-5)) << c;
  }
  const auto out = task->forward(batch);
  EXPECT_EQ(out.count, 3);
  EXPECT_TRUE(std::isfinite(out.loss.item<double>()));
}

TEST_F(FileImageTaskTest, TrainingIsIdenticalWithOneAndFourWorkersAndUsesThePrefetchedBatches) {
  std::vector<StepLosses> runs(3);
  std::vector<int64_t> workers = {0, 1, 4};
  for (size_t k = 0; k < workers.size(); ++k) {
    torch::manual_seed(0);
    auto task =
        make_file_image_task(tiny_model(), folder_data(dir_ / "root", workers[k]), 0, torch::kCPU);
    train::Trainer trainer(trainer_config(), trainer_options(), *task, runs[k]);
    EXPECT_EQ(trainer.run().status, train::RunStatus::done);
    auto& loader = dynamic_cast<FileImageClassificationTask&>(*task).loader();
    if (workers[k] > 0) {
      // 2 epochs x 2 steps x 2 micro-batches, every one built ahead of its request.
      EXPECT_EQ(loader.prefetch_hits(), 8) << workers[k];
      EXPECT_EQ(loader.prefetch_misses(), 0) << workers[k];
    }
  }
  ASSERT_EQ(runs[0].losses.size(), 4u);
  EXPECT_EQ(runs[0].losses, runs[1].losses);
  EXPECT_EQ(runs[0].losses, runs[2].losses);
  EXPECT_EQ(runs[0].test_acc, runs[2].test_acc);
}

TEST_F(FileImageTaskTest, CorruptFileStopsTheRunWithItsPathOrIsSkippedAndCounted) {
  const std::string bad = dir_ / "root/train/b/img_4.JPEG";
  data::testing::write_bytes(bad, {0xff, 0xd8, 0xff});
  {
    torch::manual_seed(0);
    auto task = make_file_image_task(tiny_model(), folder_data(dir_ / "root", 2), 0, torch::kCPU);
    StepLosses rec;
    train::Trainer trainer(trainer_config(), trainer_options(), *task, rec);
    try {
      trainer.run();
      FAIL() << "expected a DataError";
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
  auto data = folder_data(dir_ / "root", 2);
  data.skip_corrupt = true;
  torch::manual_seed(0);
  auto task = make_file_image_task(tiny_model(), data, 0, torch::kCPU);
  StepLosses rec;
  train::Trainer trainer(trainer_config(), trainer_options(), *task, rec);
  EXPECT_EQ(trainer.run().status, train::RunStatus::done);
  EXPECT_EQ(rec.losses.size(), 4u);
  auto& loader = dynamic_cast<FileImageClassificationTask&>(*task).loader();
  EXPECT_EQ(loader.skipped_count(), 1);
  EXPECT_NE(loader.skipped_messages().at(0).find(bad), std::string::npos);
}

TEST_F(FileImageTaskTest, ValidationImagesAreHeldOutTrainingImagesWithTheEvalTransform) {
  auto data = folder_data(dir_ / "root", 2);
  data.val_size = 5;
  torch::manual_seed(0);
  auto task = make_file_image_task(tiny_model(), data, 0, torch::kCPU);
  torch::manual_seed(0);
  auto whole = make_file_image_task(tiny_model(), folder_data(dir_ / "root", 0), 0, torch::kCPU);
  ASSERT_EQ(task->size(train::Split::train), 13);
  ASSERT_EQ(task->size(train::Split::val), 5);
  ASSERT_EQ(task->size(train::Split::test), 9);
  EXPECT_EQ(whole->size(train::Split::val), 0);
  const train::ValidationSplit split(18, 5, "folder");
  // Consecutive evaluation chunks (read ahead by the loader threads), with and without a seed:
  // validation example i is training image held_out[i] under the eval transform.
  for (int64_t start = 0; start < 5; start += 2) {
    const auto chunk = torch::arange(start, std::min<int64_t>(start + 2, 5), torch::kInt64);
    const auto stored = split.to_stored(train::Split::val, chunk);
    const auto expected = whole->make_batch(train::Split::train, stored, std::nullopt);
    for (auto seed : {std::optional<uint64_t>(), std::optional<uint64_t>(42)}) {
      const auto val = task->make_batch(train::Split::val, chunk, seed);
      EXPECT_TRUE(val.inputs.equal(expected.inputs)) << start;
      EXPECT_TRUE(val.targets.equal(expected.targets)) << start;
    }
  }
  // Training index i is the i-th kept image.
  const auto all = torch::arange(13, torch::kInt64);
  EXPECT_TRUE(
      task->make_batch(train::Split::train, all, std::nullopt)
          .inputs.equal(whole
                            ->make_batch(train::Split::train,
                                         split.to_stored(train::Split::train, all), std::nullopt)
                            .inputs));
  data.val_size = 18;
  try {
    make_file_image_task(tiny_model(), data, 0, torch::kCPU);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("data.val_size = 18"), std::string::npos) << what;
    EXPECT_NE(what.find("18 training examples of"), std::string::npos) << what;
  }
}

TEST_F(FileImageTaskTest, BadPathsAreInputErrors) {
  EXPECT_THROW(make_file_image_task(tiny_model(), folder_data("", 0), 0, torch::kCPU), InputError);
  EXPECT_THROW(make_file_image_task(tiny_model(), folder_data(dir_ / "nope", 0), 0, torch::kCPU),
               InputError);
  // No validation images: nothing to evaluate on.
  std::filesystem::remove_all(dir_.path / "root/val");
  EXPECT_THROW(make_file_image_task(tiny_model(), folder_data(dir_ / "root", 0), 0, torch::kCPU),
               InputError);
}

}  // namespace
}  // namespace batchlab::experiments
