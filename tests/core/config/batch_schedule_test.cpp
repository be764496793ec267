// Batch-size schedules in the config (core/config/batch_schedule.h): the two forms, what they
// resolve to, the canonical text, and every rule, reported all at once.
#include "core/config/batch_schedule.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/config/loader.h"
#include "tests/core/config/config_test_util.h"

namespace batchlab::config {
namespace {

using testing::describe;
using testing::diagnostics_of;
using testing::expect_same_config;
using testing::parse_ok;

// [batch] lines, then an Adam run of `schedule_lines` (epochs = 2 unless they say otherwise).
std::string schedule_doc(const std::string& batch_lines,
                         const std::string& schedule_lines = "epochs = 2") {
  return "schema_version = 1\n[batch]\n" + batch_lines +
         "\n[optim]\nname = \"adamw\"\nbase_batch = 64\nscaling = \"sqrt\"\n[schedule]\n" +
         schedule_lines + "\n";
}

// The diagnostic for `key` among `all`, whose rule mentions `fix`; a failure when there is none.
void expect_problem(const std::vector<Diagnostic>& all, const std::string& key,
                    const std::string& fix) {
  for (const auto& d : all) {
    if (d.key == key && d.rule.find(fix) != std::string::npos) return;
  }
  ADD_FAILURE() << "no diagnostic on " << key << " mentioning '" << fix
                << "' among:" << describe(all);
}

// The one diagnostic of `text`, on `key`, mentioning `fix`.
void expect_only(const std::string& text, const std::string& key, const std::string& fix,
                 const LoadOptions& options = {}) {
  const auto all = diagnostics_of(text, options);
  EXPECT_EQ(all.size(), 1u) << describe(all);
  expect_problem(all, key, fix);
}

TEST(BatchSchedule, ExplicitPointsAreReadAndGlobalIsTheLastBatch) {
  const ExperimentConfig c =
      parse_ok(schedule_doc("schedule = [[0, 64], [1000, 128], [3000, 256]]"));
  const std::vector<BatchPoint> want = {{0, 64}, {1000, 128}, {3000, 256}};
  EXPECT_EQ(c.batch.schedule, want);
  EXPECT_EQ(c.batch.global, 256);  // derived: the batch the run ends at
  EXPECT_TRUE(has_batch_schedule(c.batch));
  EXPECT_EQ(batch_points(c.batch), want);
  // The canonical text holds the points and reads back to the same config.
  const std::string text = to_canonical_toml(c);
  EXPECT_NE(text.find("schedule = [[0, 64], [1000, 128], [3000, 256]]"), std::string::npos) << text;
  const ExperimentConfig again = parse_ok(text);
  expect_same_config(again, c);
  EXPECT_EQ(again.batch.schedule, want);
  // batch.global may also be given, as the last batch.
  EXPECT_EQ(parse_ok(schedule_doc("global = 256\nschedule = [[0, 64], [3000, 256]]")).batch.global,
            256);
}

TEST(BatchSchedule, ARampDoublesUntilTheGlobalBatch) {
  const ExperimentConfig c =
      parse_ok(schedule_doc("global = 384\nramp_start = 48\nramp_double_every = 500"));
  const std::vector<BatchPoint> want = {{0, 48}, {500, 96}, {1000, 192}, {1500, 384}};
  EXPECT_EQ(batch_points(c.batch), want);
  // Not a power of two apart: the last doubling is capped at batch.global.
  const ExperimentConfig capped =
      parse_ok(schedule_doc("global = 320\nramp_start = 64\nramp_double_every = 500"));
  const std::vector<BatchPoint> capped_want = {{0, 64}, {500, 128}, {1000, 256}, {1500, 320}};
  EXPECT_EQ(batch_points(capped.batch), capped_want);
  const std::string text = to_canonical_toml(c);
  EXPECT_NE(text.find("ramp_start = 48"), std::string::npos) << text;
  expect_same_config(parse_ok(text), c);
}

TEST(BatchSchedule, AFixedBatchKeepsItsCanonicalText) {
  const ExperimentConfig c = parse_ok(schedule_doc("global = 256"));
  EXPECT_FALSE(has_batch_schedule(c.batch));
  EXPECT_EQ(batch_points(c.batch), (std::vector<BatchPoint>{{0, 256}}));
  const std::string text = to_canonical_toml(c);
  EXPECT_EQ(text.find("schedule = ["), std::string::npos) << text;
  EXPECT_EQ(text.find("ramp_"), std::string::npos) << text;
}

TEST(BatchSchedule, PointsOutOfOrderAreNamedWithTheFix) {
  expect_only(schedule_doc("schedule = [[0, 64], [2000, 128], [1000, 256]]"), "batch.schedule[2]",
              "the examples must increase from point to point (1000 follows 2000); sort the "
              "points");
  expect_only(schedule_doc("schedule = [[0, 128], [1000, 64]]\nglobal = 64"), "batch.schedule[1]",
              "the batch must grow from point to point (64 follows 128)");
  expect_only(schedule_doc("schedule = [[100, 64], [1000, 128]]"), "batch.schedule[0]",
              "the first point must be at 0 examples");
  expect_only(schedule_doc("schedule = [[0, 64]]"), "batch.schedule",
              "one point is a fixed batch: set batch.global = 64 and remove batch.schedule");
  expect_only(schedule_doc("global = 512\nschedule = [[0, 64], [1000, 256]]"), "batch.global",
              "must be the last batch of batch.schedule (256)");
  expect_only(schedule_doc("schedule = [[0, 0], [1000, 256]]"), "batch.schedule[0]",
              "the batch must be in [1, 8388608]");
}

TEST(BatchSchedule, MalformedPointsAreTypeErrors) {
  expect_only(schedule_doc("global = 64\nschedule = [[0, 64, 3]]"), "batch.schedule",
              "expected an array of [examples, global batch] integer pairs, but element 0 is an "
              "array of 3 elements");
  expect_only(schedule_doc("global = 64\nschedule = [[0, 64.5]]"), "batch.schedule",
              "integer pairs");
  expect_only(schedule_doc("global = 64\nschedule = 64"), "batch.schedule", "an array");
}

TEST(BatchSchedule, RampKeysGoTogetherAndStartBelowTheGlobalBatch) {
  expect_only(schedule_doc("global = 256\nramp_start = 64"), "batch.ramp_start",
              "needs batch.ramp_double_every");
  expect_only(schedule_doc("global = 256\nramp_double_every = 1000"), "batch.ramp_double_every",
              "needs batch.ramp_start");
  expect_only(schedule_doc("global = 256\nramp_start = 256\nramp_double_every = 1000"),
              "batch.ramp_start", "must be below batch.global (256)");
  expect_only(schedule_doc("schedule = [[0, 64], [1000, 256]]\nramp_start = 64\n"
                           "ramp_double_every = 1000"),
              "batch.ramp_start", "give the batch schedule one way");
}

TEST(BatchSchedule, EveryBatchMustSplitIntoWholeMicroBatches) {
  LoadOptions four;
  four.world_size = 4;
  // 4 devices: 6 is no whole share per device (the final 256 is).
  expect_only(schedule_doc("schedule = [[0, 6], [1000, 256]]"), "batch.schedule[0]",
              "batch 6 is not world_size (4) x micro (0) x a whole accumulation; give every "
              "batch of the schedule as a multiple of 4",
              four);
  expect_only(schedule_doc("micro = 32\nschedule = [[0, 16], [1000, 256]]"), "batch.schedule[0]",
              "batch 16 is smaller than batch.micro (32)");
  expect_only(schedule_doc("micro = 32\nschedule = [[0, 32], [500, 48], [1000, 256]]"),
              "batch.schedule[1]", "give every batch of the schedule as a multiple of 32");
  expect_only(schedule_doc("bn_group = 32\nschedule = [[0, 16], [1000, 256]]"), "batch.schedule[0]",
              "its micro-batch (16) is not a whole number of "
              "batch.bn_group (32) groups");
  // A ramp's batches too: it starts at 96, which 64-example micro-batches do not divide.
  expect_only(schedule_doc("micro = 64\nglobal = 384\nramp_start = 96\nramp_double_every = 500"),
              "batch.ramp_start", "batch 96 is not world_size (1) x micro (64)");
}

TEST(BatchSchedule, KeysInStepsOrTimeCannotGoWithIt) {
  const std::string points = "schedule = [[0, 64], [1000, 256]]";
  expect_only(schedule_doc(points, "steps = 100"), "schedule.steps",
              "give the run length as schedule.epochs");
  expect_only(schedule_doc(points, "epochs = 2\nwarmup_steps = 10"), "schedule.warmup_steps",
              "give the warmup as schedule.warmup_epochs or warmup_fraction");
  expect_only(schedule_doc(points, "budget = \"1h\""), "schedule.budget",
              "a budget ends the run by the clock");
  // warmup_epochs and warmup_fraction are fine: they are examples.
  parse_ok(schedule_doc(points, "epochs = 2\nwarmup_fraction = 0.1"));
  parse_ok(schedule_doc(points, "epochs = 2\nwarmup_epochs = 0.5"));
}

TEST(BatchSchedule, PointsPastTheRunsEndAreNamedWhenTheDataSizeIsKnown) {
  LoadOptions sized;
  sized.training_examples = [](const DataConfig&) { return std::optional<int64_t>(1000); };
  // 2 epochs of 1000 examples: the run ends at 2000.
  expect_only(schedule_doc("schedule = [[0, 64], [1500, 128], [2000, 256]]"), "batch.schedule[2]",
              "at 2000 examples, at or past the run's end (2000 examples", sized);
  expect_only(schedule_doc("global = 512\nramp_start = 64\nramp_double_every = 800"),
              "batch.ramp_double_every",
              "the ramp reaches batch.global (512) only at 2400 examples (3 doublings), at or "
              "past the run's end (2000 examples",
              sized);
  parse_ok(schedule_doc("schedule = [[0, 64], [1500, 128], [1999, 256]]"), sized);
  // Without the data size the rule waits for the trainer (core/train: a ConfigError there).
  parse_ok(schedule_doc("schedule = [[0, 64], [1500, 128], [2000, 256]]"));
}

TEST(BatchSchedule, EveryProblemIsReportedAtOnce) {
  LoadOptions four;
  four.world_size = 4;
  const auto all =
      diagnostics_of(schedule_doc("global = 512\nschedule = [[10, 6], [1000, 256], [900, 128]]\n"
                                  "ramp_start = 3",
                                  "steps = 100\nwarmup_steps = 5"),
                     four);
  // The two forms at once hides the forms' own rules (which one was meant is unclear) ...
  expect_problem(all, "batch.ramp_start", "give the batch schedule one way");
  EXPECT_EQ(all.size(), 1u) << describe(all);
  const auto rest =
      diagnostics_of(schedule_doc("global = 512\nschedule = [[10, 6], [1000, 256], [900, 128]]",
                                  "steps = 100\nwarmup_steps = 5"),
                     four);
  // ... without it, every point and every key is named in one error.
  expect_problem(rest, "batch.schedule[0]", "the first point must be at 0 examples");
  expect_problem(rest, "batch.schedule[2]", "the examples must increase");
  expect_problem(rest, "batch.schedule[2]", "the batch must grow");
  expect_problem(rest, "batch.global", "must be the last batch of batch.schedule (128)");
  expect_problem(rest, "schedule.steps", "schedule.epochs");
  expect_problem(rest, "schedule.warmup_steps", "warmup_fraction");
  EXPECT_EQ(rest.size(), 6u) << describe(rest);
}

}  // namespace
}  // namespace batchlab::config
