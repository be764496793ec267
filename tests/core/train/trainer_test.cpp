#include "core/train/trainer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "core/config/experiment_config.h"
#include "core/train/evaluator.h"
#include "tests/core/train/toy_config.h"
#include "tests/core/train/toy_task.h"

namespace batchlab::train {
namespace {

using testing::RecordingReporter;
using testing::ToyTask;

TrainerOptions runtime() {
  TrainerOptions o;
  o.eval_chunk = 50;
  return o;
}

TEST(Trainer, RecordsStepsEvalsAndTheGap) {
  ToyTask task;  // 256 examples / 32 = 8 steps per epoch
  RecordingReporter rec;
  Trainer trainer(testing::toy_config(), runtime(), task, rec);
  auto outcome = trainer.run();
  EXPECT_EQ(outcome.status, RunStatus::done);
  EXPECT_EQ(outcome.last_step, 32);
  EXPECT_EQ(rec.geometry.batch.steps_per_epoch, 8);
  EXPECT_EQ(rec.geometry.total_steps, 32);
  ASSERT_EQ(rec.steps.size(), 32u);
  EXPECT_EQ(rec.steps.front().step, 0);
  EXPECT_EQ(rec.steps.back().samples, 32 * 32);
  ASSERT_EQ(rec.evals.size(), 4u);
  for (const auto& e : rec.evals) {
    ASSERT_TRUE(e.test_loss && e.train_loss && e.gap_loss && e.gap_acc);  // full_eval = always
    EXPECT_DOUBLE_EQ(*e.gap_loss, *e.test_loss - *e.train_loss);
    EXPECT_DOUBLE_EQ(*e.gap_acc, *e.train_acc - *e.test_acc);
    EXPECT_FALSE(e.val_loss || e.val_acc);  // no validation split
  }
  EXPECT_EQ(rec.evals.back().step, 32);
  // The problem is learnable: loss falls and accuracy rises well above chance (0.25).
  EXPECT_LT(rec.evals.back().train_loss, rec.evals.front().train_loss);
  EXPECT_GT(rec.evals.back().test_acc.value(), 0.6);
  // The last eval row reports exactly what the evaluator measures on the test split.
  auto direct = evaluate_split(task, Split::test, 1000);
  EXPECT_NEAR(direct.accuracy, rec.evals.back().test_acc.value(), 1e-12);
  EXPECT_NEAR(direct.loss, rec.evals.back().test_loss.value(), 1e-6);  // float32 chunk sums
}

TEST(Trainer, LearningRateFollowsTheScheduleEveryStep) {
  ToyTask task;
  RecordingReporter rec;
  auto c = testing::toy_config();
  c.schedule.warmup_steps = 4;
  c.schedule.decay = "linear";
  Trainer trainer(c, runtime(), task, rec);
  trainer.run();
  optim::LrSchedule expected(c.schedule, 0.1, 8);
  for (const auto& s : rec.steps) EXPECT_DOUBLE_EQ(s.lr, expected.at_step(s.step)) << s.step;
}

TEST(Trainer, MilestoneAndStopAtTarget) {
  ToyTask task;
  RecordingReporter rec;
  auto c = testing::toy_config();
  c.schedule.epochs = 20.0;
  c.train.targets = {{"test_acc", 0.5}};
  c.train.stop_at_target = true;
  Trainer trainer(c, runtime(), task, rec);
  auto outcome = trainer.run();
  ASSERT_EQ(rec.milestones.size(), 1u);
  EXPECT_EQ(rec.milestones[0].step, rec.evals.back().step);
  EXPECT_GE(rec.evals.back().test_acc.value(), 0.5);
  EXPECT_LT(outcome.last_step, 160);  // stopped early
  EXPECT_EQ(outcome.status, RunStatus::done);
}

TEST(Trainer, HugeLearningRateDiverges) {
  ToyTask task;
  RecordingReporter rec;
  auto c = testing::toy_config();
  c.optim.base_lr = 1e6;
  c.train.divergence = 2.0;
  Trainer trainer(c, runtime(), task, rec);
  auto outcome = trainer.run();
  EXPECT_EQ(outcome.status, RunStatus::diverged);
  EXPECT_FALSE(outcome.error.empty());
  EXPECT_LT(outcome.last_step, 10);
  EXPECT_TRUE(rec.evals.empty());
  ASSERT_FALSE(rec.steps.empty());
  const auto& last = rec.steps.back();
  EXPECT_TRUE(!std::isfinite(last.train_loss) ||
              last.train_loss > 2.0 * rec.steps.front().train_loss);
}

TEST(Trainer, StopRequestEndsAsPreempted) {
  ToyTask task;
  RecordingReporter rec;
  std::atomic<bool> stop{true};
  auto o = runtime();
  o.stop_requested = &stop;
  Trainer trainer(testing::toy_config(), o, task, rec);
  auto outcome = trainer.run();
  EXPECT_EQ(outcome.status, RunStatus::preempted);
  EXPECT_EQ(outcome.last_step, 0);
  EXPECT_TRUE(rec.evals.empty());
}

// The training clock covers data, forward/backward, communication and the update, nothing else: a
// slow measurement at the point where the per-layer statistics copy the weights before the update
// (the probe sleeps 50 ms per step there, 0.4 s in all) leaves train_s at the few milliseconds
// eight toy steps take.
TEST(Trainer, MeasurementBeforeTheUpdateIsOffTheTrainingClock) {
  ToyTask task;
  RecordingReporter rec;
  auto c = testing::toy_config();
  c.schedule.epochs.reset();
  c.schedule.steps = 8;
  c.train.layer_stats_every = 1;
  auto o = runtime();
  int64_t probed = 0;
  o.before_update_probe = [&](int64_t) {
    ++probed;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  };
  Trainer trainer(c, o, task, rec);
  const auto outcome = trainer.run();
  ASSERT_EQ(outcome.status, RunStatus::done);
  EXPECT_EQ(probed, 8);
  // 2 s slept in the probe against 8 toy steps (milliseconds when idle, a few hundred on a loaded
  // machine): on the clock, the training time would be at least 2 s.
  EXPECT_LT(outcome.train_s, 1.0) << "the measurement was timed as training";
  EXPECT_GT(outcome.train_s, 0.0);
  EXPECT_DOUBLE_EQ(rec.steps.back().wall_s, outcome.train_s);
}

TEST(Trainer, LogEveryThinsStepRows) {
  ToyTask task;
  RecordingReporter rec;
  auto c = testing::toy_config();
  c.train.log_every = 5;
  Trainer trainer(c, runtime(), task, rec);
  trainer.run();
  ASSERT_EQ(rec.steps.size(), 7u);  // steps 0, 5, ..., 30
  EXPECT_EQ(rec.steps[1].step, 5);
}

}  // namespace
}  // namespace batchlab::train
