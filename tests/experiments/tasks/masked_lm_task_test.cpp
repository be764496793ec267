// The masked-LM task on a tiny generated corpus and bert_tiny: batch layout, the loss as
// cross-entropy over exactly the masked tokens (+ NSP), correct/count, fixed evaluation masks, the
// two-phase length switch, and the configuration errors.
#include "experiments/tasks/masked_lm_task.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <torch/torch.h>

#include "core/errors.h"
#include "core/train/validation_split.h"
#include "tests/experiments/data/text_test_util.h"
#include "tests/experiments/tasks/text_task_fixture.h"

namespace batchlab::experiments {
namespace {

constexpr char kBertTiny[] = "bert_tiny";
using MaskedLmTaskTest = testing::TextTaskTest<MaskedLmTask, kBertTiny, &make_masked_lm_task>;

TEST_F(MaskedLmTaskTest, BatchesCarryIdsTargetsAndMaskedPositions) {
  auto task = make();
  ASSERT_TRUE(task);
  EXPECT_EQ(task->corpus().tokenizer->vocab_size(), 300);
  EXPECT_EQ(task->size(train::Split::train), task->builder(train::Split::train).size());
  EXPECT_GT(task->size(train::Split::test), 0);
  EXPECT_GT(task->size(train::Split::train), 20 * task->size(train::Split::test));

  const auto b = task->make_batch(train::Split::train, first(8), 123);
  EXPECT_EQ(b.size, 8);
  EXPECT_EQ(b.inputs.sizes(), (std::vector<int64_t>{8, 32}));
  const int64_t n = b.targets.size(0);
  EXPECT_GT(n, 8 * 30 * 0.1);
  EXPECT_EQ(b.extras.at(kMlmPositions).size(0), n);
  EXPECT_FALSE(b.extras.at(kMlmSegments).defined());
  EXPECT_FALSE(b.extras.at(kMlmNspLabels).defined());
}

TEST_F(MaskedLmTaskTest, LossIsCrossEntropyOverTheMaskedTokens) {
  auto task = make();
  auto& net = dynamic_cast<models::MaskedLanguageModel&>(task->model());
  net.eval();
  torch::NoGradGuard no_grad;
  const auto b = task->make_batch(train::Split::train, first(16), 5);
  const auto out = task->forward(b);
  EXPECT_EQ(out.count, b.targets.size(0));

  const auto logits = net.forward(b.inputs, {}, {}, b.extras[kMlmPositions]).mlm_logits;
  ASSERT_EQ(logits.size(0), out.count);
  const auto expected = torch::nn::functional::cross_entropy(logits, b.targets);
  EXPECT_NEAR(out.loss.item<double>(), expected.item<double>(), 1e-5);
  EXPECT_EQ(out.correct.item<int64_t>(), logits.argmax(1).eq(b.targets).sum().item<int64_t>());
  // An untrained model is near the uniform guess over 300 pieces.
  EXPECT_NEAR(out.loss.item<double>(), std::log(300.0), 0.7);
}

TEST_F(MaskedLmTaskTest, TrainingLowersTheLossOfABatch) {
  testing::expect_training_lowers_the_loss(*make());
}

TEST_F(MaskedLmTaskTest, EvaluationMasksAreFixedTrainingMasksFollowTheSeed) {
  auto task = make();
  const auto idx = first(6);
  const auto e1 = task->make_batch(train::Split::test, idx, std::nullopt);
  const auto e2 = task->make_batch(train::Split::test, idx, std::nullopt);
  EXPECT_TRUE(e1.inputs.equal(e2.inputs));
  EXPECT_TRUE(e1.targets.equal(e2.targets));
  const auto t1 = task->make_batch(train::Split::train, idx, 1);
  const auto t2 = task->make_batch(train::Split::train, idx, 2);
  EXPECT_FALSE(t1.inputs.equal(t2.inputs));
}

// The unmasked sequences of a batch: the corrupted ids with the original ids put back.
torch::Tensor original_ids(const torch::Tensor& ids, const torch::Tensor& positions,
                           const torch::Tensor& labels) {
  auto flat = ids.clone().view(-1);
  flat.index_put_({positions}, labels);
  return flat.view_as(ids);
}

torch::Tensor original_ids(const train::Batch& b) {
  return original_ids(b.inputs, b.extras.at(kMlmPositions), b.targets);
}

TEST_F(MaskedLmTaskTest, ValidationSequencesAreHeldOutTrainingSequencesWithFixedMasks) {
  auto whole = make();
  const int64_t n = whole->size(train::Split::train);
  EXPECT_EQ(whole->size(train::Split::val), 0);
  data_.val_size = 10;
  auto task = make();
  ASSERT_EQ(task->size(train::Split::train), n - 10);
  ASSERT_EQ(task->size(train::Split::val), 10);
  const train::ValidationSplit split(n, 10, "corpus");
  const auto& builder = whole->builder(train::Split::train);

  // Validation example i is training sequence held_out[i].
  const auto val = task->make_batch(train::Split::val, first(10), std::nullopt);
  const auto ref = builder.build(split.held_out().data(), 10, 32, 1);
  EXPECT_TRUE(
      original_ids(val).equal(original_ids(ref.input_ids, ref.masked_positions, ref.labels)));
  // Masked the same way at every evaluation, and never with the training masks.
  const auto again = task->make_batch(train::Split::val, first(10), std::nullopt);
  EXPECT_TRUE(again.inputs.equal(val.inputs));
  EXPECT_TRUE(again.targets.equal(val.targets));
  EXPECT_TRUE(task->make_batch(train::Split::val, first(10), 77).inputs.equal(val.inputs));

  // Training index i is the i-th kept sequence.
  const auto all = first(n - 10);
  const auto kept = split.to_stored(train::Split::train, all);
  const auto trained = task->make_batch(train::Split::train, all, 3);
  const auto kept_ref = builder.build(kept.data_ptr<int64_t>(), n - 10, 32, 1);
  EXPECT_TRUE(original_ids(trained).equal(
      original_ids(kept_ref.input_ids, kept_ref.masked_positions, kept_ref.labels)));

  // Another data seed: the same validation set.
  data_.seed = 9;
  EXPECT_TRUE(
      make()->make_batch(train::Split::val, first(10), std::nullopt).inputs.equal(val.inputs));

  data_.val_size = n;
  try {
    make();
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("data.val_size"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::to_string(n) + " training examples of the text"),
              std::string::npos)
        << e.what();
  }
}

// BERT's second phase changes the sequence length: cuDNN-style autotuning per shape would re-tune.
TEST_F(MaskedLmTaskTest, InputShapesAreNotFixed) { EXPECT_FALSE(make()->fixed_input_shapes()); }

TEST_F(MaskedLmTaskTest, SecondPhaseLengthFromSetProgress) {
  data_.seq_len_phase2 = 64;
  data_.phase2_fraction = 0.25;
  auto task = make();
  task->set_progress(0.74);
  EXPECT_EQ(task->make_batch(train::Split::train, first(4), 1).inputs.size(1), 32);
  task->set_progress(0.75);
  EXPECT_EQ(task->current_seq_len(), 64);
  EXPECT_EQ(task->make_batch(train::Split::train, first(4), 1).inputs.size(1), 64);
  // Evaluation stays at data.seq_len.
  EXPECT_EQ(task->make_batch(train::Split::test, first(4), std::nullopt).inputs.size(1), 32);
  const auto out = task->forward(task->make_batch(train::Split::train, first(4), 1));
  EXPECT_TRUE(std::isfinite(out.loss.item<double>()));
}

TEST_F(MaskedLmTaskTest, SentencePairsAddTheNextSentenceLoss) {
  data_.sentence_pair = true;
  model_.next_sentence = true;
  auto task = make();
  auto& net = dynamic_cast<models::MaskedLanguageModel&>(task->model());
  net.eval();
  torch::NoGradGuard no_grad;
  const auto b = task->make_batch(train::Split::train, first(16), 4);
  ASSERT_TRUE(b.extras[kMlmSegments].defined());
  ASSERT_TRUE(b.extras[kMlmNspLabels].defined());
  const auto out = task->forward(b);
  const auto o = net.forward(b.inputs, b.extras[kMlmSegments], {}, b.extras[kMlmPositions]);
  const auto expected = torch::nn::functional::cross_entropy(o.mlm_logits, b.targets) +
                        torch::nn::functional::cross_entropy(o.nsp_logits, b.extras[kMlmNspLabels]);
  EXPECT_NEAR(out.loss.item<double>(), expected.item<double>(), 1e-5);
  EXPECT_EQ(out.count, b.targets.size(0));
}

TEST_F(MaskedLmTaskTest, ConfigurationErrorsNameTheKeys) {
  auto expect_error = [&](const std::string& fragment) {
    try {
      make();
      ADD_FAILURE() << "expected InputError mentioning " << fragment;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  model_.arch = "small_resnet";
  expect_error("model.arch = \"small_resnet\"");
  model_.arch = "bert_tiny";

  // next_sentence without sentence pairs and sequences longer than model.max_seq_len are config
  // rules (core/config/validation.cpp, TextRules tests), reported before any data is read.

  data_.test_size = 1000000;
  expect_error("data.test_size");
  data_.test_size = 0;

  // A pack-text directory decides the vocabulary: another explicit size is a conflict, the
  // default defers to it.
  auto task = make();
  const auto packed = (dir_->path / "packed").string();
  data::pack_text(data::list_text_files({data_.path}), *task->corpus().tokenizer, packed, {});
  data_.path = packed;
  model_.vocab_size = 500;
  expect_error("model.vocab_size = 500");
  model_.vocab_size = config::ModelConfig{}.vocab_size;
  EXPECT_EQ(make()->corpus().tokenizer->vocab_size(), 300);
}

}  // namespace
}  // namespace batchlab::experiments
