// The benchmark's device-resident tasks: a batch of consecutive examples is a view of the examples
// made at construction (no copy, strides kept), any other index set gathers the same rows, and an
// MLM batch's masked positions index its own tokens, a causal-LM batch's targets are its inputs
// shifted by one token.
#include "experiments/bench/synthetic_tasks.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "experiments/tasks/task_outputs.h"
#include "models/registry.h"

namespace batchlab::experiments {
namespace {

std::unique_ptr<SyntheticImageTask> image_task(bool channels_last, int64_t channels = 1) {
  config::ModelConfig m;
  m.arch = "small_resnet";
  m.width = 4;
  torch::manual_seed(0);
  SyntheticImages shape;
  shape.examples = 12;
  shape.channels = channels;
  shape.height = shape.width = 16;
  shape.num_classes = 10;
  shape.channels_last = channels_last;
  return std::make_unique<SyntheticImageTask>(
      models::make_image_classifier(m, channels, 16, 16, 10), shape, torch::kCPU);
}

TEST(SyntheticImageTask, ConsecutiveExamplesAreViewsAndOtherIndicesGatherTheSameRows) {
  auto task = image_task(/*channels_last=*/false);
  EXPECT_EQ(task->size(train::Split::train), 12);
  EXPECT_EQ(task->size(train::Split::test), 0);
  EXPECT_TRUE(task->fixed_input_shapes());
  const auto a = task->make_batch(train::Split::train, torch::arange(4, 8), std::nullopt);
  const auto b = task->make_batch(train::Split::train, torch::arange(4, 8), std::nullopt);
  EXPECT_EQ(a.size, 4);
  EXPECT_EQ(a.inputs.sizes(), (std::vector<int64_t>{4, 1, 16, 16}));
  EXPECT_EQ(a.inputs.data_ptr(), b.inputs.data_ptr());  // the same storage: nothing was copied
  const auto c = task->make_batch(train::Split::train, torch::tensor({7, 4}), std::nullopt);
  EXPECT_TRUE(torch::equal(c.inputs[0], a.inputs[3]));
  EXPECT_TRUE(torch::equal(c.inputs[1], a.inputs[0]));
  EXPECT_TRUE(torch::equal(c.targets, torch::stack({a.targets[3], a.targets[0]})));
  const auto out = task->forward(a);
  EXPECT_EQ(out.count, 4);
  EXPECT_TRUE(std::isfinite(out.loss.item<double>()));
}

TEST(SyntheticImageTask, ChannelsLastKeepsNhwcStridesInEveryBatch) {
  auto task = image_task(/*channels_last=*/true, /*channels=*/3);  // NHWC differs from NCHW
  const auto batch = task->make_batch(train::Split::train, torch::arange(2, 6), std::nullopt);
  EXPECT_TRUE(batch.inputs.is_contiguous(torch::MemoryFormat::ChannelsLast));
  EXPECT_FALSE(batch.inputs.is_contiguous());
}

TEST(SyntheticMlmTask, MaskedPositionsIndexTheBatchsOwnTokens) {
  config::ModelConfig m;
  m.arch = "bert_tiny";
  m.vocab_size = 50;
  m.max_seq_len = 16;
  torch::manual_seed(0);
  SyntheticSequences shape;
  shape.examples = 6;
  shape.seq_len = 16;
  shape.vocab_size = 50;
  shape.masked_per_sequence = 3;
  SyntheticMlmTask task(models::make_masked_lm(m), shape, torch::kCPU);
  EXPECT_FALSE(task.fixed_input_shapes());

  const auto run = task.make_batch(train::Split::train, torch::arange(2, 5), std::nullopt);
  ASSERT_EQ(run.inputs.sizes(), (std::vector<int64_t>{3, 16}));
  const auto positions = run.extras.at(kMlmPositions);
  ASSERT_EQ(positions.numel(), 9);
  ASSERT_EQ(run.targets.numel(), 9);
  // Three distinct positions in each row's own 16 tokens, ascending.
  for (int64_t r = 0; r < 3; ++r) {
    const auto row = positions.slice(0, 3 * r, 3 * r + 3);
    EXPECT_TRUE((row >= 16 * r).all().item<bool>());
    EXPECT_TRUE((row < 16 * (r + 1)).all().item<bool>());
    EXPECT_TRUE((row.slice(0, 1) > row.slice(0, 0, 2)).all().item<bool>());
  }
  // The same examples in another order: the same tokens, positions and labels per row.
  const auto shuffled = task.make_batch(train::Split::train, torch::tensor({4, 2}), std::nullopt);
  EXPECT_TRUE(torch::equal(shuffled.inputs[0], run.inputs[2]));
  EXPECT_TRUE(torch::equal(shuffled.extras.at(kMlmPositions).slice(0, 0, 3),
                           positions.slice(0, 6, 9) - 32));  // row 2 of the run is row 0 here
  EXPECT_TRUE(torch::equal(shuffled.targets.slice(0, 3, 6), run.targets.slice(0, 0, 3)));
  const auto out = task.forward(run);
  EXPECT_EQ(out.count, 9);
  EXPECT_TRUE(std::isfinite(out.loss.item<double>()));
}

TEST(SyntheticCausalLmTask, TargetsAreTheInputsShiftedByOneToken) {
  config::ModelConfig m;
  m.arch = "gpt2_tiny";
  m.max_seq_len = 16;
  torch::manual_seed(0);
  SyntheticTokens shape;
  shape.examples = 5;
  shape.seq_len = 16;
  shape.vocab_size = 40;
  SyntheticCausalLmTask task(models::make_causal_lm(m, 40), shape, torch::kCPU);
  EXPECT_TRUE(task.fixed_input_shapes());
  EXPECT_EQ(task.size(train::Split::train), 5);
  EXPECT_EQ(task.size(train::Split::test), 0);

  const auto run = task.make_batch(train::Split::train, torch::arange(1, 4), std::nullopt);
  ASSERT_EQ(run.inputs.sizes(), (std::vector<int64_t>{3, 16}));
  ASSERT_EQ(run.targets.sizes(), (std::vector<int64_t>{3, 16}));
  EXPECT_TRUE(run.inputs.is_contiguous());  // a view of consecutive rows, not a gather
  // Token t + 1 of a sequence is the target at position t.
  EXPECT_TRUE(torch::equal(run.inputs.slice(1, 1), run.targets.slice(1, 0, 15)));
  const auto shuffled = task.make_batch(train::Split::train, torch::tensor({3, 1}), std::nullopt);
  EXPECT_TRUE(torch::equal(shuffled.inputs[0], run.inputs[2]));
  EXPECT_TRUE(torch::equal(shuffled.targets[1], run.targets[0]));
  const auto out = task.forward(run);
  EXPECT_EQ(out.count, 3 * 16);
  // Untrained on uniform tokens: about the entropy of 40 equally likely ids.
  EXPECT_NEAR(out.loss.item<double>(), std::log(40.0), 0.5);
}

}  // namespace
}  // namespace batchlab::experiments
