// One test per single-key range rule: the diagnostic names the key, points at the value
// (line 3 of doc(), the column after `key = `) and says what the value must be.
#include <gtest/gtest.h>

#include "core/config/loader.h"
#include "tests/core/config/config_test_util.h"

namespace batchlab::config {
namespace {

using testing::doc;
using testing::expect_one;

// [model]
TEST(RangeRules, ModelWidthPositive) {
  expect_one(doc("model", "width = 0"), "model.width", 3, 9, "must be > 0");
}
TEST(RangeRules, ModelNumClassesNonNegative) {
  expect_one(doc("model", "num_classes = -1"), "model.num_classes", 3, 15, "must be >= 0");
}

// [data]
TEST(RangeRules, DataWorkersNonNegative) {
  expect_one(doc("data", "workers = -1"), "data.workers", 3, 11, "must be >= 0");
}
TEST(RangeRules, DataTrainSizeNonNegative) {
  expect_one(doc("data", "train_size = -1"), "data.train_size", 3, 14, "must be >= 0");
}
TEST(RangeRules, DataTestSizeNonNegative) {
  expect_one(doc("data", "test_size = -1"), "data.test_size", 3, 13, "must be >= 0");
}
TEST(RangeRules, DataValSizeNonNegative) {
  expect_one(doc("data", "val_size = -1"), "data.val_size", 3, 12, "must be >= 0");
}
TEST(RangeRules, DataEvalTrainSamplesNonNegative) {
  expect_one(doc("data", "eval_train_samples = -1"), "data.eval_train_samples", 3, 22,
             "must be >= 0");
}

// [batch]
TEST(RangeRules, BatchGlobalPositive) {
  expect_one(doc("batch", "global = 0"), "batch.global", 3, 10, "must be > 0");
}
TEST(RangeRules, BatchMicroNonNegative) {
  expect_one(doc("batch", "micro = -1"), "batch.micro", 3, 9, "must be >= 0");
}
TEST(RangeRules, BatchMicroAtMostGlobal) {
  expect_one(doc("batch", "micro = 512"), "batch.micro", 3, 9, "must be <= batch.global (256)");
}
TEST(RangeRules, BatchBnGroupNonNegative) {
  expect_one(doc("batch", "bn_group = -2"), "batch.bn_group", 3, 12, "must be >= 0");
}
TEST(RangeRules, BatchBnGroupDividesMicro) {
  // micro = 0 with world size 1: the micro-batch is the whole global batch of 256.
  expect_one(doc("batch", "bn_group = 24"), "batch.bn_group", 3, 12,
             "pick a bn_group that divides 256 (e.g. 16 or 32)");
}

// [optim]
TEST(RangeRules, OptimBaseLrPositive) {
  expect_one(doc("optim", "base_lr = -0.1"), "optim.base_lr", 3, 11, "must be > 0");
}
TEST(RangeRules, OptimBaseBatchPositive) {
  expect_one(doc("optim", "base_batch = 0"), "optim.base_batch", 3, 14, "must be > 0");
}
TEST(RangeRules, OptimMomentumInUnitInterval) {
  expect_one(doc("optim", "momentum = 1.0"), "optim.momentum", 3, 12, "must be in [0, 1)");
}
TEST(RangeRules, OptimBetasEachInUnitInterval) {
  expect_one(doc("optim", "betas = [0.9, 1.0]"), "optim.betas", 3, 9,
             "element 1 must be in [0, 1)");
}
TEST(RangeRules, OptimEpsPositive) {
  expect_one(doc("optim", "eps = 0"), "optim.eps", 3, 7, "must be > 0");
}
TEST(RangeRules, OptimWeightDecayNonNegative) {
  expect_one(doc("optim", "weight_decay = -0.01"), "optim.weight_decay", 3, 16, "must be >= 0");
}
TEST(RangeRules, OptimTrustCoefficientPositive) {
  expect_one(doc("optim", "trust_coefficient = 0"), "optim.trust_coefficient", 3, 21,
             "must be > 0");
}
TEST(RangeRules, OptimGradClipNonNegative) {
  expect_one(doc("optim", "grad_clip = -1"), "optim.grad_clip", 3, 13, "must be >= 0");
}
TEST(RangeRules, OptimExcludeEntriesNonEmpty) {
  expect_one(doc("optim", "exclude = [\"ndim<2\", \"\"]"), "optim.exclude", 3, 11,
             "element 1 must not be empty");
}
TEST(RangeRules, OptimExcludeDimensionRuleSyntax) {
  expect_one(doc("optim", "exclude = [\"ndim<x\"]"), "optim.exclude", 3, 11,
             "element 0 dimension rules are written ndim<N");
}
TEST(RangeRules, GroupMatchDimensionRuleSyntax) {
  expect_one(doc("optim", "groups = [{ match = \"ndim < 2\" }]"), "optim.groups[0].match", 3, 21,
             "dimension rules are written ndim<N");
}
TEST(RangeRules, GroupMatchNonEmpty) {
  expect_one(doc("optim", "groups = [{ match = \"\" }]"), "optim.groups[0].match", 3, 21,
             "must not be empty");
}
TEST(RangeRules, GroupMatchRequired) {
  // Reported at the entry that lacks it.
  expect_one(doc("optim", "groups = [{ lr_scale = 2.0 }]"), "optim.groups[0].match", 3, 11,
             "missing; add match =");
}
TEST(RangeRules, GroupLrScalePositive) {
  expect_one(doc("optim", "groups = [{ match = \"*\", lr_scale = 0 }]"), "optim.groups[0].lr_scale",
             3, 37, "must be > 0");
}
TEST(RangeRules, GroupWeightDecayNonNegative) {
  expect_one(doc("optim", "groups = [{ match = \"*\", weight_decay = -1 }]"),
             "optim.groups[0].weight_decay", 3, 41, "must be >= 0");
}

// [schedule]
TEST(RangeRules, ScheduleWarmupEpochsNonNegative) {
  expect_one(doc("schedule", "warmup_epochs = -1"), "schedule.warmup_epochs", 3, 17,
             "must be >= 0");
}
TEST(RangeRules, ScheduleWarmupStepsNonNegative) {
  expect_one(doc("schedule", "warmup_steps = -5"), "schedule.warmup_steps", 3, 16, "must be >= 0");
}
TEST(RangeRules, ScheduleWarmupFractionAtMostOne) {
  expect_one(doc("schedule", "warmup_fraction = 1.5"), "schedule.warmup_fraction", 3, 19,
             "must be in [0, 1]");
}
TEST(RangeRules, ScheduleWarmupStartInUnitInterval) {
  expect_one(doc("schedule", "warmup_start = 2"), "schedule.warmup_start", 3, 16,
             "must be in [0, 1]");
}
TEST(RangeRules, ScheduleEpochsPositive) {
  expect_one(doc("schedule", "epochs = 0"), "schedule.epochs", 3, 10, "must be > 0");
}
TEST(RangeRules, ScheduleStepsNotNegative) {
  // 0 is a run without updates: it evaluates its starting weights (e.g. model.init_from).
  expect_one(doc("schedule", "steps = -1"), "schedule.steps", 3, 9, "must be >= 0");
}
TEST(RangeRules, ScheduleBudgetPositive) {
  expect_one(doc("schedule", "budget = \"0h\""), "schedule.budget", 3, 10, "must be > 0");
}
TEST(RangeRules, ScheduleBudgetWellFormed) {
  expect_one(doc("schedule", "budget = \"2 hours\""), "schedule.budget", 3, 10,
             "write a duration such as \"2h\", \"90m\", \"45s\", \"1h30m\" or \"1.5h\"");
}
TEST(RangeRules, SchedulePowerPositive) {
  expect_one(doc("schedule", "power = 0"), "schedule.power", 3, 9, "must be > 0");
}
TEST(RangeRules, ScheduleEndLrNonNegative) {
  expect_one(doc("schedule", "end_lr = -0.1"), "schedule.end_lr", 3, 10, "must be >= 0");
}
TEST(RangeRules, ScheduleMilestonesStrictlyIncreasing) {
  expect_one(doc("schedule", "milestones = [30, 20]"), "schedule.milestones", 3, 14,
             "must be strictly increasing");
}
TEST(RangeRules, ScheduleMilestonesPositive) {
  expect_one(doc("schedule", "milestones = [0, 20]"), "schedule.milestones", 3, 14,
             "element 0 must be > 0");
}
TEST(RangeRules, ScheduleGammaInHalfOpenUnitInterval) {
  expect_one(doc("schedule", "gamma = 0"), "schedule.gamma", 3, 9, "must be in (0, 1]");
}

// [train]
TEST(RangeRules, TrainThreadsNonNegative) {
  expect_one(doc("train", "threads = -1"), "train.threads", 3, 11, "must be >= 0");
}
TEST(RangeRules, TrainEvalEveryPositive) {
  expect_one(doc("train", "eval_every = 0"), "train.eval_every", 3, 14, "must be > 0");
}
TEST(RangeRules, TrainEvalsPerOctaveNonNegative) {
  expect_one(doc("train", "evals_per_octave = -3"), "train.evals_per_octave", 3, 20,
             "must be >= 0");
}
TEST(RangeRules, TrainLogEveryAtLeastOne) {
  expect_one(doc("train", "log_every = 0"), "train.log_every", 3, 13, "must be >= 1");
}
TEST(RangeRules, TrainLayerStatsEveryNonNegative) {
  expect_one(doc("train", "layer_stats_every = -1"), "train.layer_stats_every", 3, 21,
             "must be >= 0");
}
TEST(RangeRules, TrainCheckpointEveryNonNegative) {
  expect_one(doc("train", "checkpoint_every = -1"), "train.checkpoint_every", 3, 20,
             "must be >= 0");
}
TEST(RangeRules, TrainDivergenceOffOrAboveOne) {
  expect_one(doc("train", "divergence = 0.5"), "train.divergence", 3, 14, "must be 0 (off) or > 1");
}
TEST(RangeRules, TrainAccuracyTargetIsAFraction) {
  expect_one(doc("train", "target = { metric = \"test_acc\", value = 76 }"),
             "train.target[0].value", 3, 41, "must be in (0, 1]: a fraction, e.g. 0.9 for 90%");
}
TEST(RangeRules, TrainValidationAccuracyTargetIsAFraction) {
  expect_one(doc("train", "target = { metric = \"val_acc\", value = 88 }\n[data]\nval_size = 100"),
             "train.target[0].value", 3, 40, "must be in (0, 1]");
}
TEST(RangeRules, TrainLossTargetIsNotNegative) {
  // The same rule as a [study] target's (core/config/schema.h target_value_rule).
  expect_one(doc("train", "target = { metric = \"test_loss\", value = -0.5 }"),
             "train.target[0].value", 3, 42, "a loss target must be a finite number >= 0");
}
TEST(RangeRules, TrainStopAtTargetNeedsATarget) {
  expect_one(doc("train", "stop_at_target = true"), "train.stop_at_target", 3, 18,
             "add e.g. target = { metric = \"test_acc\", value = 0.9 }");
}

TEST(RangeRules, NonFiniteFloatsRejected) {
  expect_one(doc("optim", "base_lr = inf"), "optim.base_lr", 3, 11, "must be a finite number");
}

}  // namespace
}  // namespace batchlab::config
