// The rules that need the steps per epoch (core/config/run_length.h): with the training split's
// size given (LoadOptions::training_examples, as `batchlab train` gives it), a warmup longer than a
// run in other units, and epochs that round to no step, are reported by validation with the
// position of the key, together with every other problem; without it they are left to the LR
// schedule, which applies the same rules once the data is loaded.
#include <gtest/gtest.h>

#include "core/config/loader.h"
#include "core/config/run_length.h"
#include "tests/core/config/config_test_util.h"

namespace batchlab::config {
namespace {

using testing::describe;
using testing::diagnostics_of;
using testing::doc;
using testing::expect_one;
using testing::parse_ok;

// 2560 training examples: 10 steps per epoch at batch.global = 256 (doc()'s batch).
LoadOptions sized(int64_t examples = 2560) {
  LoadOptions options;
  options.training_examples = [examples](const DataConfig&) { return examples; };
  return options;
}

TEST(RunLengthRules, RunLengthInStepsFollowsTheStepsPerEpoch) {
  ScheduleConfig s;
  s.epochs = 2.5;
  s.warmup_fraction = 0.2;
  const RunLength length = run_length(s, 10);
  EXPECT_EQ(length.total_steps, 25);
  EXPECT_EQ(length.warmup_steps, 5);
  s.warmup_fraction.reset();
  s.warmup_epochs = 0.25;
  EXPECT_EQ(run_length(s, 10).warmup_steps, 3);  // 2.5 rounds away from zero
  ScheduleConfig steps;
  steps.steps = 40;
  steps.warmup_steps = 7;
  EXPECT_EQ(run_length(steps, 0).total_steps, 40);
  EXPECT_EQ(run_length(steps, 0).warmup_steps, 7);
}

TEST(RunLengthRules, AWarmupInStepsLongerThanARunInEpochsIsLocated) {
  // doc(): line 3 holds the key under test, the run is 10 epochs = 100 steps.
  expect_one(doc("schedule", "warmup_steps = 101"), "schedule.warmup_steps", 3, 16,
             "longer than the run: schedule.epochs = 10.0 at 10 steps per epoch is 100 steps; "
             "pick a warmup of at most 100 steps",
             sized());
  parse_ok(doc("schedule", "warmup_steps = 100"), sized());
  // Without the data size the rule waits for the schedule.
  parse_ok(doc("schedule", "warmup_steps = 101"));
}

TEST(RunLengthRules, AWarmupInEpochsLongerThanARunInStepsIsLocated) {
  expect_one(doc("schedule", "steps = 25\nwarmup_epochs = 3"), "schedule.warmup_epochs", 4, 17,
             "at 10 steps per epoch this warmup is 30 steps and schedule.steps = 25; pick a "
             "warmup of at most 2.5 epochs",
             sized());
  parse_ok(doc("schedule", "steps = 25\nwarmup_epochs = 2.5"), sized());
}

TEST(RunLengthRules, EpochsThatRoundToNoStepAreLocated) {
  expect_one(doc("schedule", "epochs = 0.01"), "schedule.epochs", 3, 10,
             "10 steps per epoch make this no step at all", sized());
}

TEST(RunLengthRules, ReportedWithTheOtherProblemsAndNotOnTopOfThem) {
  // doc() ends with [schedule], so the appended warmup lands there.
  const auto both = diagnostics_of(doc("optim", "momentum = 2") + "warmup_steps = 500\n", sized());
  ASSERT_EQ(both.size(), 2u) << describe(both);
  EXPECT_EQ(both[0].key, "optim.momentum") << describe(both);
  EXPECT_EQ(both[1].key, "schedule.warmup_steps") << describe(both);
  // A problem with a key the rule builds on is reported alone.
  const auto batch = diagnostics_of(doc("batch", "global = 0") + "warmup_steps = 500\n", sized());
  ASSERT_EQ(batch.size(), 1u) << describe(batch);
  EXPECT_EQ(batch[0].key, "batch.global");
}

TEST(RunLengthRules, UnknownOrTooSmallTrainingSetsLeaveTheRulesToTheData) {
  LoadOptions unknown;
  unknown.training_examples = [](const DataConfig&) { return std::optional<int64_t>(); };
  parse_ok(doc("schedule", "warmup_steps = 101"), unknown);
  // Fewer examples than a batch: no step per epoch; the batch geometry reports it with the data.
  parse_ok(doc("schedule", "warmup_steps = 101"), sized(100));
}

TEST(RunLengthRules, TheScheduleAppliesTheSameRules) {
  ScheduleConfig s;
  s.epochs = 10.0;
  s.warmup_steps = 101;
  std::vector<Diagnostic> out;
  validate_run_length(s, 10, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].key, "schedule.warmup_steps");
  EXPECT_EQ(out[0].value, "101");
  out.clear();
  s.budget_s = 60.0;  // a budget has no step count to compare with
  validate_run_length(s, 10, out);
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace batchlab::config
