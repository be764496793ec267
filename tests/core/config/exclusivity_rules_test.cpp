// Rules relating several keys: one warmup, one length, budget with warmup_fraction only,
// decay = "step" with milestones, and the batch geometry.
#include <gtest/gtest.h>

#include "core/config/loader.h"
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
