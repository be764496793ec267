// Rules relating several keys: one warmup, one length, budget with warmup_fraction only and without
// step decay, decay = "step" with milestones, a warmup no longer than the run, Nesterov with
// momentum, text sequence lengths, targets, and the batch geometry.
#include <gtest/gtest.h>

#include "core/config/loader.h"
#include "core/config/validation.h"
#include "tests/core/config/config_test_util.h"

namespace batchlab::config {
namespace {

using testing::doc;
using testing::expect_one;
using testing::parse_ok;

TEST(ExclusivityRules, AtMostOneWarmup) {
  // Reported on the second key set, naming the first.
  expect_one(doc("schedule", "warmup_epochs = 1\nwarmup_steps = 100"), "schedule.warmup_steps", 4,
             16, "also set: schedule.warmup_epochs; remove all but one");
}

TEST(ExclusivityRules, LengthRequired) {
  expect_one("schema_version = 1\n[batch]\nglobal = 256\n[schedule]\ndecay = \"cosine\"\n",
             "schedule", 4, 1,
             "set exactly one of schedule.epochs, schedule.steps or schedule.budget (none is set)");
}

TEST(ExclusivityRules, LengthExactlyOne) {
  expect_one(doc("schedule", "epochs = 10\nsteps = 1000"), "schedule.steps", 4, 9,
             "also set: schedule.epochs; remove all but one");
}

TEST(ExclusivityRules, BudgetAllowsOnlyWarmupFraction) {
  expect_one(doc("schedule", "budget = \"2h\"\nwarmup_epochs = 1"), "schedule.warmup_epochs", 4, 17,
             "use schedule.warmup_fraction instead");
  const ExperimentConfig ok = parse_ok(doc("schedule", "budget = \"2h\"\nwarmup_fraction = 0.1"));
  EXPECT_EQ(ok.schedule.budget_s, 7200.0);
}

TEST(ExclusivityRules, StepDecayNeedsMilestones) {
  expect_one(doc("schedule", "decay = \"step\""), "schedule.decay", 3, 9,
             "add e.g. milestones = [30, 60, 80]");
}

TEST(ExclusivityRules, BudgetForbidsStepDecay) {
  expect_one(doc("schedule", "budget = \"2h\"\ndecay = \"step\"\nmilestones = [1]"),
             "schedule.decay", 4, 9, "with schedule.budget the decay must be constant, linear");
}

TEST(ExclusivityRules, WarmupStepsNoLongerThanTheRun) {
  expect_one(doc("schedule", "steps = 100\nwarmup_steps = 200"), "schedule.warmup_steps", 4, 16,
             "longer than the run (schedule.steps = 100)");
  parse_ok(doc("schedule", "steps = 100\nwarmup_steps = 100"));
}

TEST(ExclusivityRules, WarmupEpochsNoLongerThanTheRun) {
  expect_one(doc("schedule", "epochs = 2\nwarmup_epochs = 3"), "schedule.warmup_epochs", 4, 17,
             "longer than the run (schedule.epochs = 2.0)");
  // Mixed units need the data size: without a training split size (LoadOptions) they are left to
  // run_length_rules_test.cpp's rules, run by the schedule once the data is loaded.
  parse_ok(doc("schedule", "epochs = 2\nwarmup_steps = 5000"));
}

TEST(OptimRules, NesterovNeedsMomentum) {
  expect_one(doc("optim", "name = \"nesterov\"\nmomentum = 0"), "optim.momentum", 4, 12,
             "must be > 0 with Nesterov momentum (optim.name = \"nesterov\")");
  expect_one(doc("optim", "name = \"lars\"\nnesterov = true\nmomentum = 0"), "optim.momentum", 5,
             12, "(optim.nesterov = true)");
  // Adam-family optimizers do not read optim.nesterov.
  parse_ok(doc("optim", "name = \"adamw\"\nnesterov = true\nmomentum = 0"));
}

TEST(TextRules, NextSentenceNeedsSentencePairs) {
  expect_one(doc("model", "next_sentence = true"), "model.next_sentence", 3, 17,
             "needs data.sentence_pair = true");
  parse_ok(doc("model", "next_sentence = true\n[data]\nsentence_pair = true"));
}

TEST(TextRules, SequencesHoldTheSpecialTokens) {
  expect_one(doc("data", "seq_len = 2"), "data.seq_len", 3, 11, "must be >= 3");
  expect_one(doc("data", "seq_len = 4\nsentence_pair = true"), "data.seq_len", 3, 11,
             "must be >= 5");
}

TEST(TextRules, SecondPhaseIsNotShorter) {
  expect_one(doc("data", "seq_len = 256\nseq_len_phase2 = 128"), "data.seq_len_phase2", 4, 18,
             "must be 0 (no second phase) or >= data.seq_len (256)");
}

TEST(TextRules, SequencesFitThePositionEmbedding) {
  expect_one(doc("data", "seq_len = 1024"), "data.seq_len", 3, 11,
             "longer than model.max_seq_len (512)");
  expect_one(doc("data", "seq_len_phase2 = 600"), "data.seq_len_phase2", 3, 18,
             "longer than model.max_seq_len (512)");
  parse_ok(doc("data", "seq_len = 1024\n[model]\nmax_seq_len = 1024"));
}

TEST(TargetRules, ValidationAccuracyTargetNeedsValSize) {
  expect_one(doc("train", "target = { metric = \"val_acc\", value = 0.88 }"),
             "train.target[0].metric", 3, 21, "set data.val_size (e.g. val_size = 5000)");
}

TEST(TargetRules, ValidationLossTargetNeedsValSize) {
  // The second target is the one without a split to measure on; it alone is reported.
  expect_one(doc("train",
                 "target = [{ metric = \"test_acc\", value = 0.9 }, { metric = \"val_loss\", "
                 "value = 0.3 }]"),
             "train.target[1].metric", 3, 60, "needs a validation split held out of the training");
}

TEST(TargetRules, ValidationTargetAcceptedWithValSize) {
  const ExperimentConfig ok = parse_ok(
      doc("train", "target = { metric = \"val_acc\", value = 0.88 }\n[data]\nval_size = 5000"));
  ASSERT_EQ(ok.train.targets.size(), 1u);
  EXPECT_EQ(ok.train.targets[0].metric, "val_acc");
  EXPECT_EQ(ok.data.val_size, 5000);
  // Also when val_size arrives from the command line.
  LoadOptions options;
  options.overrides = {"data.val_size=10"};
  EXPECT_EQ(parse_ok(doc("train", "target = { metric = \"val_loss\", value = 0.3 }"), options)
                .data.val_size,
            10);
}

TEST(TargetRules, ValidationSplitRuleIsSharedWithStudies) {
  // The sweep's [study] target uses the same rule on the cell's data section.
  DataConfig data;
  EXPECT_TRUE(validation_split_rule("val_acc", data).has_value());
  EXPECT_TRUE(validation_split_rule("val_loss", data).has_value());
  EXPECT_FALSE(validation_split_rule("test_acc", data).has_value());
  data.val_size = 1;
  EXPECT_FALSE(validation_split_rule("val_acc", data).has_value());
}

TEST(GeometryRules, GlobalMustBeWorldTimesMicroTimesWholeAccumulation) {
  expect_one(doc("batch", "global = 1000\nmicro = 48"), "batch.global", 3, 10,
             "not world_size (1) x micro (48) x accumulation for any whole accumulation "
             "(1000 / 48 = 20.8); pick a micro that divides 1000 / 1");
}

TEST(GeometryRules, GlobalDivisibleByWorldWhenMicroIsZero) {
  LoadOptions options;
  options.world_size = 3;
  expect_one(doc("batch", "global = 256"), "batch.global", 3, 10,
             "pick a global batch that is a multiple of 3 or set batch.micro", options);
}

TEST(GeometryRules, NamesWorldSizeWhenDataParallel) {
  LoadOptions options;
  options.world_size = 4;
  expect_one(doc("batch", "global = 1024\nmicro = 48"), "batch.global", 3, 10,
             "not world_size (4) x micro (48) x accumulation for any whole accumulation "
             "(1024 / (4 x 48) = 5.33); pick a micro that divides 1024 / 4",
             options);
  // 4 devices x 64 x 4 accumulation steps = 1024.
  parse_ok(doc("batch", "global = 1024\nmicro = 64"), options);
}

TEST(GeometryRules, ReusableWithoutAFile) {
  // The sweep planner checks geometry per world size on configs it built itself.
  BatchConfig batch;
  batch.global = 4096;
  batch.micro = 256;
  std::vector<Diagnostic> out;
  validate_batch_geometry(batch, 8, out);
  EXPECT_TRUE(out.empty());
  validate_batch_geometry(batch, 3, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].key, "batch.global");
  EXPECT_EQ(out[0].value, "4096");
  EXPECT_EQ(out[0].line, 0);
  validate_batch_geometry(batch, 0, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].key, "world_size");
}

}  // namespace
}  // namespace batchlab::config
