#include "core/optim/lr_schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/errors.h"

namespace batchlab::optim {
namespace {

constexpr double kTol = 1e-12;

config::OptimConfig optim_with(const std::string& scaling) {
  config::OptimConfig o;
  o.base_lr = 0.1;
  o.base_batch = 256;
  o.scaling = scaling;
  return o;
}

TEST(ScaledPeakLr, NoneLinearSqrt) {
  // k = 1024 / 256 = 4
  EXPECT_NEAR(scaled_peak_lr(optim_with("none"), 1024), 0.1, kTol);
  EXPECT_NEAR(scaled_peak_lr(optim_with("linear"), 1024), 0.4, kTol);  // 0.1 * 4
  EXPECT_NEAR(scaled_peak_lr(optim_with("sqrt"), 1024), 0.2, kTol);    // 0.1 * sqrt(4)
  // k = 64 / 256 = 0.25: smaller batches scale down too
  EXPECT_NEAR(scaled_peak_lr(optim_with("linear"), 64), 0.025, kTol);
  EXPECT_NEAR(scaled_peak_lr(optim_with("sqrt"), 64), 0.05, kTol);
  // k = 32768 / 256 = 128: sqrt(128) = 11.3137084989847...
  EXPECT_NEAR(scaled_peak_lr(optim_with("sqrt"), 32768), 1.1313708498984762, kTol);
}

// A violated precondition is an internal error naming the component, never bad input: user input is
// validated once, in core/config.
template <class F>
void expect_internal_error(F&& f, const std::string& component, const std::string& key) {
  try {
    f();
    ADD_FAILURE() << "expected an internal error about " << key;
  } catch (const InputError& e) {
    ADD_FAILURE() << "a precondition reported as bad input: " << e.what();
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("internal error: " + component), std::string::npos) << what;
    EXPECT_NE(what.find(key), std::string::npos) << what;
  }
}

TEST(ScaledPeakLr, ConfigsThatSkippedValidationAreInternalErrors) {
  expect_internal_error([] { scaled_peak_lr(optim_with("cubic"), 1024); }, "scaled_peak_lr",
                        "optim.scaling");
  expect_internal_error([] { scaled_peak_lr(optim_with("linear"), 0); }, "scaled_peak_lr",
                        "batch.global");
  auto o = optim_with("linear");
  o.base_batch = 0;
  expect_internal_error([&] { scaled_peak_lr(o, 1024); }, "scaled_peak_lr", "optim.base_batch");
}

// 10 epochs of 100 steps (T = 1000), warmup 1 epoch (W = 100) from 0.1 * peak, end_lr 0.004.
config::ScheduleConfig epoch_schedule(const std::string& decay) {
  config::ScheduleConfig s;
  s.epochs = 10;
  s.warmup_epochs = 1;
  s.warmup_start = 0.1;
  s.decay = decay;
  s.end_lr = 0.004;
  s.power = 2.0;
  s.milestones = {3, 6};  // steps 300 and 600
  s.gamma = 0.1;
  return s;
}

// Every decay kind under every scaling rule, pinned at warmup start (step 0), mid-warmup (50),
// warmup end (100), mid-decay (550: p = 450 / 900 = 0.5) and end (1000). P is the scaled peak for
// global batch 1024 = 4 x base_batch: none 0.1, linear 0.4, sqrt 0.2.
struct Pinned {
  const char* scaling;
  double peak;
};

class EveryDecayAndScaling : public testing::TestWithParam<Pinned> {};

TEST_P(EveryDecayAndScaling, PinnedValues) {
  const double p = GetParam().peak;
  const double peak = scaled_peak_lr(optim_with(GetParam().scaling), 1024);
  ASSERT_NEAR(peak, p, kTol);
  const double end = 0.004;

  for (const char* decay : {"constant", "linear", "poly", "cosine", "step"}) {
    SCOPED_TRACE(decay);
    const LrSchedule s(epoch_schedule(decay), peak, 100);
    EXPECT_EQ(s.total_steps(), 1000);
    EXPECT_EQ(s.warmup_steps(), 100);
    EXPECT_NEAR(s.at_step(0), 0.1 * p, kTol);                 // warmup_start * P
    EXPECT_NEAR(s.at_step(50), (0.1 + 0.9 * 0.5) * p, kTol);  // halfway up: 0.55 P
    EXPECT_NEAR(s.at_step(100), p, kTol);                     // warmup end: the peak
    const std::string d = decay;
    if (d == "constant") {
      EXPECT_NEAR(s.at_step(550), p, kTol);
      EXPECT_NEAR(s.at_step(1000), p, kTol);
    } else if (d == "linear") {
      EXPECT_NEAR(s.at_step(550), p + (end - p) * 0.5, kTol);              // (P + 0.004) / 2
      EXPECT_NEAR(s.at_step(999), p + (end - p) * (899.0 / 900.0), kTol);  // last update
      EXPECT_NEAR(s.at_step(1000), end, kTol);
    } else if (d == "poly") {
      EXPECT_NEAR(s.at_step(550), end + (p - end) * 0.25, kTol);  // (1 - 0.5)^2 = 0.25
      EXPECT_NEAR(s.at_step(1000), end, kTol);
    } else if (d == "cosine") {
      EXPECT_NEAR(s.at_step(550), end + (p - end) * 0.5, kTol);  // (1 + cos(pi/2)) / 2 = 0.5
      // p = 225 / 900 = 0.25: (1 + cos(pi/4)) / 2 = 0.8535533905932737
      EXPECT_NEAR(s.at_step(325), end + (p - end) * 0.8535533905932737, kTol);
      EXPECT_NEAR(s.at_step(1000), end, kTol);
    } else {  // step: x0.1 at epoch 3 (step 300) and epoch 6 (step 600)
      EXPECT_NEAR(s.at_step(299), p, kTol);
      EXPECT_NEAR(s.at_step(300), 0.1 * p, kTol);
      EXPECT_NEAR(s.at_step(550), 0.1 * p, kTol);
      EXPECT_NEAR(s.at_step(600), 0.01 * p, kTol);
      EXPECT_NEAR(s.at_step(1000), 0.01 * p, kTol);
    }
    // Past the end the LR stays at the end value; progress 0.55 is step 550.
    EXPECT_NEAR(s.at_step(5000), s.at_step(1000), kTol);
    EXPECT_NEAR(s.at_progress(0.55), s.at_step(550), kTol);
    EXPECT_NEAR(s.current(550, 12345.0), s.at_step(550), kTol);  // the clock is ignored
  }
}

INSTANTIATE_TEST_SUITE_P(Scaling, EveryDecayAndScaling,
                         testing::Values(Pinned{"none", 0.1}, Pinned{"linear", 0.4},
                                         Pinned{"sqrt", 0.2}),
                         [](const testing::TestParamInfo<Pinned>& i) { return i.param.scaling; });

TEST(LrSchedule, WarmupBySteps) {
  config::ScheduleConfig c;
  c.steps = 110;
  c.warmup_steps = 10;            // from 0 (warmup_start default)
  c.decay = "linear";             // to end_lr 0
  const LrSchedule s(c, 1.0, 0);  // steps_per_epoch unused
  EXPECT_EQ(s.total_steps(), 110);
  EXPECT_EQ(s.warmup_steps(), 10);
  EXPECT_DOUBLE_EQ(s.at_step(0), 0.0);
  EXPECT_DOUBLE_EQ(s.at_step(5), 0.5);
  EXPECT_DOUBLE_EQ(s.at_step(10), 1.0);
  EXPECT_DOUBLE_EQ(s.at_step(60), 0.5);  // p = 50 / 100
  EXPECT_DOUBLE_EQ(s.at_step(110), 0.0);
  EXPECT_FALSE(s.finished(109, 0.0));
  EXPECT_TRUE(s.finished(110, 0.0));
}

TEST(LrSchedule, WarmupByFraction) {
  config::ScheduleConfig c;
  c.steps = 200;
  c.warmup_fraction = 0.1;  // 20 steps
  c.decay = "poly";
  c.power = 1.0;
  c.end_lr = 0.5;
  const LrSchedule s(c, 2.0, 0);
  EXPECT_EQ(s.warmup_steps(), 20);
  EXPECT_DOUBLE_EQ(s.at_step(10), 1.0);    // half of the peak
  EXPECT_DOUBLE_EQ(s.at_step(20), 2.0);    // peak
  EXPECT_DOUBLE_EQ(s.at_step(110), 1.25);  // 0.5 + 1.5 * (1 - 0.5)
  EXPECT_DOUBLE_EQ(s.at_step(200), 0.5);
}

TEST(LrSchedule, NoWarmupStartsAtThePeak) {
  config::ScheduleConfig c;
  c.steps = 100;
  c.decay = "cosine";
  const LrSchedule s(c, 3.0, 0);
  EXPECT_EQ(s.warmup_steps(), 0);
  EXPECT_DOUBLE_EQ(s.at_step(0), 3.0);
  EXPECT_NEAR(s.at_step(50), 1.5, kTol);
  EXPECT_NEAR(s.at_step(100), 0.0, kTol);
}

// A fake training clock: the schedule only ever sees the elapsed seconds it is given.
struct FakeClock {
  double now_s = 0.0;
  double elapsed() const { return now_s; }
  void advance(double s) { now_s += s; }
};

TEST(LrSchedule, BudgetFollowsTheInjectedClock) {
  config::ScheduleConfig c;
  c.budget_s = 3600.0;       // "1h"
  c.warmup_fraction = 0.05;  // 180 s
  c.decay = "cosine";
  c.end_lr = 0.0;
  const LrSchedule s(c, 1.0, 100);
  EXPECT_TRUE(s.budgeted());
  EXPECT_EQ(s.total_steps(), 0);
  EXPECT_EQ(s.warmup_steps(), 0);
  EXPECT_THROW(s.at_step(3), Error);

  FakeClock clock;
  EXPECT_DOUBLE_EQ(s.current(0, clock.elapsed()), 0.0);  // warmup start
  clock.advance(90.0);                                   // progress 0.025: halfway up
  EXPECT_DOUBLE_EQ(s.current(7, clock.elapsed()), 0.5);
  clock.advance(90.0);  // 180 s: warmup end
  EXPECT_DOUBLE_EQ(s.current(1, clock.elapsed()), 1.0);
  clock.advance(1710.0);  // 1890 s: progress 0.525, p = 0.475 / 0.95 = 0.5
  EXPECT_NEAR(s.current(999999, clock.elapsed()), 0.5, kTol);
  EXPECT_NEAR(s.progress(0, clock.elapsed()), 0.525, kTol);
  EXPECT_FALSE(s.finished(0, clock.elapsed()));
  clock.advance(1710.0);  // 3600 s: the end
  EXPECT_NEAR(s.current(0, clock.elapsed()), 0.0, kTol);
  EXPECT_TRUE(s.finished(0, clock.elapsed()));
  clock.advance(400.0);  // overrun (the last step ended late): stays at the end value
  EXPECT_NEAR(s.current(0, clock.elapsed()), 0.0, kTol);

  // The LR depends on the clock only: a slow and a fast run agree at the same elapsed time,
  // whatever their step counts.
  EXPECT_DOUBLE_EQ(s.current(10, 1000.0), s.current(10000, 1000.0));
  EXPECT_DOUBLE_EQ(s.current(10, 1000.0), s.at_progress(1000.0 / 3600.0));
}

TEST(LrSchedule, ConfigsThatSkippedValidationAreInternalErrors) {
  auto expect_rejected = [](const config::ScheduleConfig& s, const std::string& key) {
    expect_internal_error([&] { LrSchedule(s, 1.0, 10); }, "LrSchedule", key);
  };
  config::ScheduleConfig none;  // no length at all
  expect_rejected(none, "set exactly one of schedule.epochs");

  config::ScheduleConfig two = none;
  two.steps = 10;
  two.epochs = 1.0;
  expect_rejected(two, "schedule.steps");

  config::ScheduleConfig long_warmup;
  long_warmup.steps = 10;
  long_warmup.warmup_steps = 11;
  expect_rejected(long_warmup, "schedule.warmup_steps");

  config::ScheduleConfig budget_step;
  budget_step.budget_s = 60.0;
  budget_step.decay = "step";
  budget_step.milestones = {1.0};
  expect_rejected(budget_step, "schedule.decay");

  config::ScheduleConfig budget_warmup_steps;
  budget_warmup_steps.budget_s = 60.0;
  budget_warmup_steps.warmup_steps = 5;
  expect_rejected(budget_warmup_steps, "schedule.warmup_steps");

  config::ScheduleConfig bad_decay;
  bad_decay.steps = 10;
  bad_decay.decay = "exp";
  expect_rejected(bad_decay, "schedule.decay");
}

TEST(LrSchedule, AssertsTheSchemaRulesWhereTheyUsedToDrift) {
  // The schedule once accepted gamma 1.5 and a milestone at epoch 0 (its own > 0 and >= 0 rules);
  // the schema's (0, 1] and > 0 are now the only definition.
  config::ScheduleConfig gamma;
  gamma.epochs = 3.0;
  gamma.decay = "step";
  gamma.milestones = {1.0};
  gamma.gamma = 1.5;
  expect_internal_error([&] { LrSchedule(gamma, 1.0, 10); }, "LrSchedule", "schedule.gamma");
  config::ScheduleConfig milestone = gamma;
  milestone.gamma = 0.1;
  milestone.milestones = {0.0, 2.0};
  expect_internal_error([&] { LrSchedule(milestone, 1.0, 10); }, "LrSchedule",
                        "schedule.milestones");
  config::ScheduleConfig start;
  start.steps = 10;
  start.warmup_start = 1.5;
  expect_internal_error([&] { LrSchedule(start, 1.0, 10); }, "LrSchedule", "schedule.warmup_start");
}

TEST(LrSchedule, WhatNeedsTheDataSizeIsAConfigError) {
  // Only the data size tells these apart from valid schedules, so the schedule reports them as
  // bad input (sweep plan does too, when it knows the training set size).
  config::ScheduleConfig epochs_without_steps;
  epochs_without_steps.epochs = 3.0;
  EXPECT_THROW(LrSchedule(epochs_without_steps, 1.0, 0), ConfigError);

  config::ScheduleConfig mixed_units;  // 50 warmup steps, 2 epochs of 10 steps
  mixed_units.epochs = 2.0;
  mixed_units.warmup_steps = 50;
  EXPECT_THROW(LrSchedule(mixed_units, 1.0, 10), ConfigError);
  EXPECT_NO_THROW(LrSchedule(mixed_units, 1.0, 100));
}

}  // namespace
}  // namespace batchlab::optim
