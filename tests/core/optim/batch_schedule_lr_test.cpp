// The learning rate under a batch-size schedule (core/optim/lr_schedule.h, batch-schedule mode):
// warmup and decay are keyed to examples seen, so the decay completes exactly at the run's end
// across batch changes, and each phase's peak follows optim.scaling from its batch.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/config/batch_phases.h"
#include "core/optim/lr_schedule.h"

namespace batchlab::optim {
namespace {

constexpr double kPi = 3.14159265358979323846;

config::OptimConfig optim_with(const std::string& scaling) {
  config::OptimConfig o;
  o.name = "adamw";
  o.base_lr = 0.1;
  o.base_batch = 10;
  o.scaling = scaling;
  return o;
}

// 1000 training examples; batch 10 until 300 examples (30 steps), then 40. Two epochs are 2000
// examples: 30 + ceil(1700 / 40) = 73 steps, where the final batch alone would take 50.
config::BatchPhases ramp() { return config::BatchPhases({{0, 10}, {300, 40}}, 0, 1, 1000); }

config::ScheduleConfig cosine() {
  config::ScheduleConfig s;
  s.epochs = 2.0;
  s.warmup_fraction = 0.1;  // 200 examples: 20 steps of 10
  s.decay = "cosine";
  s.end_lr = 0.001;
  return s;
}

TEST(BatchScheduleLr, TheDecayReachesItsFloorExactlyAtTheRunsEndAcrossTheBatchChange) {
  const config::BatchPhases phases = ramp();
  const LrSchedule s(cosine(), optim_with("sqrt"), phases);
  EXPECT_EQ(s.total_examples(), 2000);
  EXPECT_EQ(s.total_steps(), 73);
  EXPECT_FALSE(s.finished(72, 0.0));
  EXPECT_TRUE(s.finished(73, 0.0));
  // Every update after the first (whose warmup starts at 0) is above the floor ...
  EXPECT_EQ(s.at_step(0), 0.0);
  for (int64_t step = 1; step < s.total_steps(); ++step) {
    EXPECT_GT(s.at_step(step), 0.001) << "step " << step;
  }
  // ... and the end is exactly the floor. A decay computed in steps with the final batch (2000 /
  // 40 = 50 steps) would have reached it at step 50, with 23 updates left at the floor.
  EXPECT_EQ(s.at_step(s.total_steps()), 0.001);
  EXPECT_GT(s.at_step(50), 0.01);
  EXPECT_NEAR(s.progress(50, 0.0), (300.0 + 20 * 40.0) / 2000.0, 1e-15);
  // Each update's LR is the cosine at the examples seen before it, from its phase's peak.
  for (int64_t step = 20; step < s.total_steps(); ++step) {
    const double x = static_cast<double>(phases.examples_before(step));
    const double peak = step < 30 ? 0.1 : 0.2;  // sqrt(40 / 10) = 2
    const double want = 0.001 + (peak - 0.001) * 0.5 * (1.0 + std::cos(kPi * (x - 200) / 1800));
    EXPECT_NEAR(s.at_step(step), want, 1e-15) << "step " << step;
  }
}

TEST(BatchScheduleLr, TheWarmupEndsAtItsExamples) {
  config::ScheduleConfig c = cosine();
  c.warmup_fraction.reset();
  c.warmup_epochs = 0.5;  // 500 examples: 30 steps of 10 (300), then 5 of 40 (500)
  const LrSchedule s(c, optim_with("sqrt"), ramp());
  EXPECT_EQ(s.warmup_examples(), 500);
  EXPECT_EQ(s.warmup_steps(), 35);
  EXPECT_LT(s.at_step(34), 0.2);
  EXPECT_NEAR(s.at_step(34), 0.2 * 460.0 / 500.0, 1e-15);  // warmup by examples, phase 1's peak
  EXPECT_DOUBLE_EQ(s.at_step(35), 0.2);
}

TEST(BatchScheduleLr, ThePeakFollowsTheScalingRuleAtTheBatchChange) {
  config::ScheduleConfig c;
  c.epochs = 2.0;
  for (const auto& [rule, after] :
       {std::pair<std::string, double>{"none", 0.1}, {"sqrt", 0.2}, {"linear", 0.4}}) {
    const LrSchedule s(c, optim_with(rule), ramp());
    EXPECT_EQ(s.at_step(29), 0.1) << rule;
    EXPECT_NEAR(s.at_step(30), after, 1e-15) << rule;
    EXPECT_NEAR(s.at_step(72), after, 1e-15) << rule;
  }
}

TEST(BatchScheduleLr, StepMilestonesAreEpochsOfExamples) {
  config::ScheduleConfig c;
  c.epochs = 2.0;
  c.decay = "step";
  c.milestones = {1.0};  // 1000 examples: reached before step 48 (300 + 18 x 40 = 1020)
  c.gamma = 0.1;
  const LrSchedule s(c, optim_with("none"), ramp());
  EXPECT_EQ(s.at_step(47), 0.1);
  EXPECT_NEAR(s.at_step(48), 0.01, 1e-15);
}

}  // namespace
}  // namespace batchlab::optim
