// What `sweep plan` derives for a job under a batch-size schedule (sweeps/derived.h): the warmup
// and total steps of the batches the run takes (config/batch_phases.h), the numbers the trainer
// records, not the run's examples over the final batch; and the examples its steps see.
#include "sweeps/derived.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/config/batch_phases.h"
#include "core/config/batch_schedule.h"
#include "core/config/loader.h"
#include "core/optim/lr_schedule.h"
#include "tests/sweeps/sweep_test_util.h"

namespace batchlab::sweeps {
namespace {

using testing::SweepFiles;

// kBase (1000 training examples, warmup 1 epoch, 2 epochs) with micro-batches of 16 and a batch
// that doubles from 16 every 200 examples up to batch.global.
std::string ramped_base(int64_t double_every) {
  std::string base = testing::kBase;
  base.replace(
      base.find("micro = 32\n"), 11,
      "micro = 16\nramp_start = 16\nramp_double_every = " + std::to_string(double_every) + "\n");
  return base;
}

TEST(DerivedValues, AScheduledJobCountsTheStepsOfItsPhases) {
  SweepFiles files(R"(schema_version = 1
[sweep]
name = "ramped"
experiment = "base.toml"
[grid]
"batch.global" = [64, 128]
)",
                   ramped_base(200));
  const Plan plan = files.plan();
  ASSERT_EQ(plan.jobs.size(), 2u);
  // Batch 64: 16 until 200 examples (13 steps, 208 seen), 32 until 400 (6 steps: 400 seen), then
  // 64. The warmup's 1000 examples end at step 19 + ceil(600 / 64) = 29, the run's 2000 at
  // 19 + ceil(1600 / 64) = 44. The final batch alone would count 15 and 30 (fixed-batch rule).
  const DerivedValues& d64 = plan.jobs[0].derived;
  EXPECT_EQ(d64.warmup_steps, 29);
  EXPECT_EQ(d64.total_steps, 44);
  // Examples seen after a number of updates, as a [search] counts its samples: the phases',
  // where steps x the final batch would count 44 x 64 = 2816 for a run of 2,016.
  ASSERT_TRUE(d64.phases.has_value());
  EXPECT_EQ(samples_after(d64, 64, 13), 208);
  EXPECT_EQ(samples_after(d64, 64, 19), 400);
  EXPECT_EQ(samples_after(d64, 64, 44), 400 + 25 * 64);
  // The geometry and peak are the final batch's, as the runs table records them.
  EXPECT_EQ(d64.micro_batch, 16);
  EXPECT_EQ(d64.accum_steps, 4);
  EXPECT_EQ(d64.steps_per_epoch, 15);
  EXPECT_NEAR(d64.peak_lr, 0.5 * std::sqrt(64.0 / 256.0), 1e-15);

  // Batch 128 adds a phase from 600 examples: the same numbers as the trainer's LR schedule.
  const DerivedValues& d128 = plan.jobs[1].derived;
  const config::ExperimentConfig cfg =
      config::parse_experiment(plan.jobs[1].config_toml, "job.toml");
  const config::BatchPhases phases(config::batch_points(cfg.batch), cfg.batch.micro, 1, 1000);
  ASSERT_EQ(phases.phases().size(), 4u);
  const optim::LrSchedule schedule(cfg.schedule, cfg.optim, phases);
  EXPECT_EQ(d128.warmup_steps, schedule.warmup_steps());
  EXPECT_EQ(d128.total_steps, schedule.total_steps());
  // 13 + 6 + ceil((600 - 400) / 64) = 23 steps to 128 at 640 examples, then ceil(1360 / 128).
  EXPECT_EQ(d128.total_steps, 23 + 11);
  EXPECT_EQ(d128.steps_per_epoch, 7);
}

TEST(DerivedValues, AFixedBatchCountsStepsTimesItsBatch) {
  SweepFiles files(R"(schema_version = 1
[sweep]
name = "fixed"
experiment = "base.toml"
)");
  const Plan plan = files.plan();
  ASSERT_EQ(plan.jobs.size(), 1u);
  EXPECT_FALSE(plan.jobs[0].derived.phases.has_value());
  EXPECT_EQ(samples_after(plan.jobs[0].derived, 64, 30), 30 * 64);
}

TEST(DerivedValues, ASchedulePointAtTheRunsEndIsAProblemOfThePlan) {
  // Doubling every 1000 examples reaches 64 at 2000: the run's end (2 epochs of 1000).
  SweepFiles files(R"(schema_version = 1
[sweep]
name = "late"
experiment = "base.toml"
)",
                   ramped_base(1000));
  const std::string message = testing::config_error([&] { files.plan(); });
  EXPECT_TRUE(testing::contains(message, "batch.ramp_double_every")) << message;
}

}  // namespace
}  // namespace batchlab::sweeps
