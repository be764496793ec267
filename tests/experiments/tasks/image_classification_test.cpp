// The in-memory image classification task's splits: data.val_size training images form
// Split::val, served exactly (never augmented) and never trained on.
#include "experiments/tasks/image_classification.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <set>
#include <string>

#include "core/errors.h"
#include "experiments/data/image_dataset.h"
#include "models/registry.h"

namespace batchlab::experiments {
namespace {

config::DataConfig synthetic(int64_t val_size) {
  config::DataConfig d;
  d.dataset = "synthetic";
  d.train_size = 200;
  d.test_size = 40;
  d.augment = true;
  d.val_size = val_size;
  return d;
}

std::unique_ptr<ImageClassificationTask> make(const config::DataConfig& data) {
  auto dataset = data::load_image_dataset(data);
  config::ModelConfig m;
  m.arch = "small_resnet";
  m.width = 4;
  torch::manual_seed(0);
  auto net = models::make_image_classifier(m, dataset.channels(), dataset.height(), dataset.width(),
                                           dataset.num_classes);
  return std::make_unique<ImageClassificationTask>(std::move(dataset), std::move(net), data.augment,
                                                   torch::kCPU);
}

TEST(ImageClassificationTaskTest, ValidationImagesAreHeldOutTrainingImagesServedUnaugmented) {
  auto task = make(synthetic(30));
  const auto& ds = task->dataset();
  ASSERT_EQ(task->size(train::Split::train), 170);
  ASSERT_EQ(task->size(train::Split::val), 30);
  ASSERT_EQ(task->size(train::Split::test), 40);
  const auto& held = task->validation_split().held_out();
  ASSERT_EQ(held.size(), 30u);

  // Validation batch i is training image held[i], normalized, with its label; a seed (and
  // data.augment) changes nothing: validation batches are evaluation batches.
  const auto idx = torch::tensor({0, 7, 29}, torch::kInt64);
  const auto stored = torch::tensor({held[0], held[7], held[29]}, torch::kInt64);
  const auto val = task->make_batch(train::Split::val, idx, std::nullopt);
  const auto expected = data::normalize_images(ds.train_images.index_select(0, stored), ds);
  EXPECT_TRUE(torch::allclose(val.inputs, expected, 1e-6, 1e-6));
  EXPECT_TRUE(val.targets.equal(ds.train_labels.index_select(0, stored)));
  EXPECT_TRUE(task->make_batch(train::Split::val, idx, 99).inputs.equal(val.inputs));

  // Training batches never contain a held-out image: every training index maps to a kept one, and
  // unaugmented they are the kept images in ascending order.
  const std::set<int64_t> held_set(held.begin(), held.end());
  const auto all = torch::arange(170, torch::kInt64);
  const auto mapped = task->validation_split().to_stored(train::Split::train, all);
  for (int64_t i = 0; i < 170; ++i) EXPECT_EQ(held_set.count(mapped[i].item<int64_t>()), 0u);
  const auto train = task->make_batch(train::Split::train, all, std::nullopt);
  EXPECT_TRUE(torch::allclose(train.inputs,
                              data::normalize_images(ds.train_images.index_select(0, mapped), ds),
                              1e-6, 1e-6));
  // Augmentation still applies to training batches.
  EXPECT_FALSE(task->make_batch(train::Split::train, idx, 99)
                   .inputs.equal(task->make_batch(train::Split::train, idx, std::nullopt).inputs));
}

TEST(ImageClassificationTaskTest, TheValidationSetDoesNotDependOnTheSeeds) {
  auto a = synthetic(30);
  auto b = synthetic(30);
  b.seed = 17;
  auto task_a = make(a);
  auto task_b = make(b);
  EXPECT_EQ(task_a->validation_split().held_out(), task_b->validation_split().held_out());
  const auto idx = torch::arange(30, torch::kInt64);
  EXPECT_TRUE(task_a->make_batch(train::Split::val, idx, std::nullopt)
                  .inputs.equal(task_b->make_batch(train::Split::val, idx, std::nullopt).inputs));
}

// Fixed-size images in fixed batches: on a GPU the trainer turns cuDNN's autotuning on.
TEST(ImageClassificationTaskTest, InputShapesAreFixed) {
  EXPECT_TRUE(make(synthetic(0))->fixed_input_shapes());
}

TEST(ImageClassificationTaskTest, WithoutValSizeTheSplitsAreAsBefore) {
  auto task = make(synthetic(0));
  EXPECT_EQ(task->size(train::Split::train), 200);
  EXPECT_EQ(task->size(train::Split::val), 0);
  const auto idx = torch::tensor({4, 199}, torch::kInt64);
  const auto& ds = task->dataset();
  EXPECT_TRUE(torch::allclose(task->make_batch(train::Split::train, idx, std::nullopt).inputs,
                              data::normalize_images(ds.train_images.index_select(0, idx), ds),
                              1e-6, 1e-6));
}

TEST(ImageClassificationTaskTest, AValSizeLeavingNothingToTrainIsAnInputError) {
  try {
    make(synthetic(200));
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("data.val_size = 200"), std::string::npos) << what;
    EXPECT_NE(what.find("200 training examples of synthetic"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace batchlab::experiments
