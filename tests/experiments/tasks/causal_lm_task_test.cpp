// The causal-LM task on a tiny generated corpus and a small GPT-2: windows of T + 1 stream tokens
// (targets = inputs shifted by one), the loss as the mean next-token cross-entropy over every
// position, correct/count, held-out validation windows, the splits' sizes, and the configuration
// errors.
#include "experiments/tasks/causal_lm_task.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <torch/torch.h>

#include <cmath>

#include "core/errors.h"
#include "core/train/evaluator.h"
#include "core/train/validation_split.h"
#include "experiments/data/mlm_token_stream.h"
#include "tests/experiments/data/text_test_util.h"
#include "tests/experiments/tasks/text_task_fixture.h"

namespace batchlab::experiments {
namespace {

constexpr char kGpt2Tiny[] = "gpt2_tiny";
using CausalLmTaskTest = testing::TextTaskTest<CausalLmTask, kGpt2Tiny, &make_causal_lm_task>;

TEST_F(CausalLmTaskTest, ExamplesAreConsecutiveWindowsWithTargetsShiftedByOne) {
  auto task = make();
  ASSERT_TRUE(task);
  EXPECT_EQ(task->corpus().tokenizer->vocab_size(), 300);
  const auto splits = data::split_stream(task->corpus().shards);
  // Every token of the training split but the first is a target once: (size - 1) / T windows.
  EXPECT_EQ(task->size(train::Split::train), (splits.train.size() - 1) / 32);
  EXPECT_EQ(task->size(train::Split::test), (splits.test.size() - 1) / 32);
  EXPECT_GT(task->size(train::Split::test), 0);

  const auto b = task->make_batch(train::Split::train, torch::tensor({0, 1, 7}, torch::kLong), 5);
  EXPECT_EQ(b.size, 3);
  ASSERT_EQ(b.inputs.sizes(), (std::vector<int64_t>{3, 32}));
  ASSERT_EQ(b.targets.sizes(), (std::vector<int64_t>{3, 32}));
  // The stream itself: window i is tokens [32 i, 32 i + 33).
  std::vector<int64_t> stream(8 * 32 + 1);
  splits.train.copy(0, static_cast<int64_t>(stream.size()), stream.data());
  const int64_t rows[] = {0, 1, 7};
  for (int r = 0; r < 3; ++r) {
    for (int t = 0; t < 32; ++t) {
      EXPECT_EQ(b.inputs[r][t].item<int64_t>(), stream[rows[r] * 32 + t]) << r << "," << t;
      EXPECT_EQ(b.targets[r][t].item<int64_t>(), stream[rows[r] * 32 + t + 1]) << r << "," << t;
    }
  }
  // Windows run across documents: the stream's [SEP] appears in the batches.
  const auto all = task->make_batch(train::Split::train, first(task->size(train::Split::train)), 1);
  EXPECT_GT(all.inputs.eq(data::kSepId).sum().item<int64_t>(), 0);
  // Nothing is drawn: another seed, or none, gives the same tokens.
  const auto again = task->make_batch(train::Split::train, torch::tensor({0, 1, 7}), 99);
  EXPECT_TRUE(again.inputs.equal(b.inputs));
  EXPECT_TRUE(task->fixed_input_shapes());
}

TEST_F(CausalLmTaskTest, LossIsTheMeanNextTokenCrossEntropyOverEveryPosition) {
  auto task = make();
  auto& net = dynamic_cast<models::CausalLanguageModel&>(task->model());
  net.eval();
  torch::NoGradGuard no_grad;
  const auto b = task->make_batch(train::Split::train, first(6), 5);
  const auto out = task->forward(b);
  EXPECT_EQ(out.count, 6 * 32);
  const auto logits = net.forward(b.inputs);  // [6, 32, 300]
  double total = 0;
  int64_t correct = 0;
  for (int64_t r = 0; r < 6; ++r) {
    for (int64_t t = 0; t < 32; ++t) {
      const auto row = logits[r][t];
      const int64_t target = b.targets[r][t].item<int64_t>();
      total += -torch::log_softmax(row, 0)[target].item<double>();
      correct += row.argmax().item<int64_t>() == target ? 1 : 0;
    }
  }
  EXPECT_NEAR(out.loss.item<double>(), total / (6 * 32), 1e-5);
  EXPECT_EQ(out.correct.item<int64_t>(), correct);
  // An untrained model is near the uniform guess over 300 pieces.
  EXPECT_NEAR(out.loss.item<double>(), std::log(300.0), 0.5);
}

TEST_F(CausalLmTaskTest, TrainingLowersTheLossOfABatch) {
  testing::expect_training_lowers_the_loss(*make());
}

TEST_F(CausalLmTaskTest, ValidationWindowsAreHeldOutTrainingWindows) {
  auto whole = make();
  const int64_t n = whole->size(train::Split::train);
  EXPECT_EQ(whole->size(train::Split::val), 0);
  data_.val_size = 10;
  auto task = make();
  ASSERT_EQ(task->size(train::Split::train), n - 10);
  ASSERT_EQ(task->size(train::Split::val), 10);
  const train::ValidationSplit split(n, 10, "corpus");
  const auto& windows = whole->windows(train::Split::train);
  const auto val = task->make_batch(train::Split::val, first(10), std::nullopt);
  const auto ref = windows.build(split.held_out().data(), 10);
  EXPECT_TRUE(val.inputs.equal(ref.inputs));
  EXPECT_TRUE(val.targets.equal(ref.targets));
  // Training index i is the i-th kept window.
  const auto kept = split.to_stored(train::Split::train, first(n - 10));
  const auto trained = task->make_batch(train::Split::train, first(n - 10), 3);
  EXPECT_TRUE(trained.inputs.equal(windows.build(kept.data_ptr<int64_t>(), n - 10).inputs));
  // The evaluator reads the validation loss as the mean over every predicted token.
  const auto metrics = train::evaluate_split(*task, train::Split::val, 4);
  EXPECT_EQ(metrics.items, 10 * 32);
  torch::NoGradGuard no_grad;
  task->model().eval();
  EXPECT_NEAR(metrics.loss, task->forward(val).loss.item<double>(), 1e-5);
}

TEST_F(CausalLmTaskTest, SizesAndBertKeysAreCheckedNamingTheKey) {
  const int64_t n = make()->size(train::Split::train);
  data_.train_size = n + 1;
  try {
    make();
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("data.train_size = " + std::to_string(n + 1)),
              std::string::npos)
        << e.what();
  }
  data_.train_size = 0;
  data_.sentence_pair = true;
  model_.next_sentence = true;
  try {
    make();
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("remove model.next_sentence = true, data.sentence_pair = true"),
              std::string::npos)
        << m;
  }
}

}  // namespace
}  // namespace batchlab::experiments
