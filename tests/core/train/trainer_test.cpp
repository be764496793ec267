#include "core/train/trainer.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/train/evaluator.h"
#include "tests/core/train/toy_task.h"

namespace batchlab::train {
namespace {

using testing::RecordingReporter;
using testing::ToyTask;

TrainerOptions base_options() {
  TrainerOptions o;
  o.batch.global = 32;
  o.optim.name = "sgd";
  o.optim.base_lr = 0.1;
  o.optim.base_batch = 32;
  o.schedule.epochs = 4.0;
  o.train.eval_every = 1.0;
  o.eval_train_samples = 64;
  o.eval_chunk = 50;
  return o;
}

TEST(Trainer, RecordsStepsEvalsAndTheGap) {
  ToyTask task;  // 256 examples / 32 = 8 steps per epoch
  RecordingReporter rec;
  Trainer trainer(base_options(), task, rec);
  auto outcome = trainer.run();
  EXPECT_EQ(outcome.status, RunStatus::done);
  EXPECT_EQ(outcome.last_step, 32);
  EXPECT_EQ(rec.geometry.steps_per_epoch, 8);
  EXPECT_EQ(rec.geometry.total_steps, 32);
  ASSERT_EQ(rec.steps.size(), 32u);
  EXPECT_EQ(rec.steps.front().step, 0);
  EXPECT_EQ(rec.steps.back().samples, 32 * 32);
  ASSERT_EQ(rec.evals.size(), 4u);
  for (const auto& e : rec.evals) {
    EXPECT_DOUBLE_EQ(e.gap_loss, e.test_loss - e.train_loss);
    EXPECT_DOUBLE_EQ(e.gap_acc, e.train_acc - e.test_acc);
  }
  EXPECT_EQ(rec.evals.back().step, 32);
  // The problem is learnable: loss falls and accuracy rises well above chance (0.25).
  EXPECT_LT(rec.evals.back().train_loss, rec.evals.front().train_loss);
  EXPECT_GT(rec.evals.back().test_acc, 0.6);
  // The last eval row reports exactly what the evaluator measures on the test split.
  auto direct = evaluate_split(task, Split::test, 1000);
  EXPECT_NEAR(direct.accuracy, rec.evals.back().test_acc, 1e-12);
  EXPECT_NEAR(direct.loss, rec.evals.back().test_loss, 1e-6);  // float32 chunk sums
}

TEST(Trainer, LearningRateFollowsTheScheduleEveryStep) {
  ToyTask task;
  RecordingReporter rec;
  auto o = base_options();
  o.schedule.warmup_steps = 4;
  o.schedule.decay = "linear";
  Trainer trainer(o, task, rec);
  trainer.run();
  optim::LrSchedule expected(o.schedule, 0.1, 8);
  for (const auto& s : rec.steps) EXPECT_DOUBLE_EQ(s.lr, expected.at_step(s.step)) << s.step;
}

TEST(Trainer, MilestoneAndStopAtTarget) {
  ToyTask task;
  RecordingReporter rec;
  auto o = base_options();
  o.schedule.epochs = 20.0;
  o.train.targets = {{"test_acc", 0.5}};
  o.train.stop_at_target = true;
  Trainer trainer(o, task, rec);
  auto outcome = trainer.run();
  ASSERT_EQ(rec.milestones.size(), 1u);
  EXPECT_EQ(rec.milestones[0].step, rec.evals.back().step);
  EXPECT_GE(rec.evals.back().test_acc, 0.5);
  EXPECT_LT(outcome.last_step, 160);  // stopped early
  EXPECT_EQ(outcome.status, RunStatus::done);
}

TEST(Trainer, HugeLearningRateDiverges) {
  ToyTask task;
  RecordingReporter rec;
  auto o = base_options();
  o.optim.base_lr = 1e6;
  o.train.divergence = 2.0;
  Trainer trainer(o, task, rec);
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
  auto o = base_options();
  o.stop_requested = &stop;
  Trainer trainer(o, task, rec);
  auto outcome = trainer.run();
  EXPECT_EQ(outcome.status, RunStatus::preempted);
  EXPECT_EQ(outcome.last_step, 0);
  EXPECT_TRUE(rec.evals.empty());
}

TEST(Trainer, LogEveryThinsStepRows) {
  ToyTask task;
  RecordingReporter rec;
  auto o = base_options();
  o.train.log_every = 5;
  Trainer trainer(o, task, rec);
  trainer.run();
  ASSERT_EQ(rec.steps.size(), 7u);  // steps 0, 5, ..., 30
  EXPECT_EQ(rec.steps[1].step, 5);
}

}  // namespace
}  // namespace batchlab::train
