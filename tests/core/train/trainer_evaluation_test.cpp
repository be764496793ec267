// What the trainer evaluates when (validation split, train.full_eval, train.evals_per_octave),
// targets on validation metrics, and stop requests (contract C2).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/config/experiment_config.h"
#include "core/train/evaluator.h"
#include "core/train/trainer.h"
#include "tests/core/train/toy_config.h"
#include "tests/core/train/toy_task.h"
#include "tests/temp_dir.h"

namespace batchlab::train {
namespace {

namespace fs = std::filesystem;
using test_support::TempDir;
using testing::RecordingReporter;
using testing::ToyTask;

ToyTask task_with_val() { return ToyTask(256, 128, 7, torch::kFloat32, 96); }

std::vector<int64_t> eval_steps(const RecordingReporter& rec) {
  std::vector<int64_t> out;
  for (const auto& e : rec.evals) out.push_back(e.step);
  return out;
}

TEST(TrainerEvaluation, ValidationEveryTimeTrainAndTestOnlyAtTheEndUnderFullEvalFinal) {
  auto task = task_with_val();
  RecordingReporter rec;
  auto c = testing::toy_config();
  c.train.full_eval = "final";
  Trainer trainer(c, {}, task, rec);
  ASSERT_EQ(trainer.run().status, RunStatus::done);
  ASSERT_EQ(eval_steps(rec), (std::vector<int64_t>{8, 16, 24, 32}));
  for (size_t i = 0; i < rec.evals.size(); ++i) {
    const auto& e = rec.evals[i];
    EXPECT_TRUE(e.val_loss && e.val_acc) << e.step;
    const bool last = i + 1 == rec.evals.size();
    EXPECT_EQ(e.test_loss.has_value(), last) << e.step;
    EXPECT_EQ(e.train_acc.has_value(), last) << e.step;
    EXPECT_EQ(e.gap_acc.has_value(), last) << e.step;
  }
  // The row holds what the evaluator measures on the validation split.
  const auto direct = evaluate_split(task, Split::val, 1000);
  EXPECT_NEAR(direct.accuracy, *rec.evals.back().val_acc, 1e-12);
  EXPECT_NEAR(direct.loss, *rec.evals.back().val_loss, 1e-6);
}

// Schedule-Free AdamW trains at y and reports x (core/optim/eval_weights.h): the trainer's
// evaluations measure x through the optimizer's guard, and training continues from y untouched.
TEST(TrainerEvaluation, ScheduleFreeIsEvaluatedWithItsAveragedWeights) {
  auto task = task_with_val();
  RecordingReporter rec;
  auto c = testing::toy_config();
  c.optim.name = "schedulefree_adamw";
  c.optim.base_lr = 0.01;
  c.schedule.decay = "constant";
  Trainer trainer(c, {}, task, rec);
  ASSERT_EQ(trainer.run().status, RunStatus::done);
  const double reported = *rec.evals.back().val_loss;
  const auto at_y = evaluate_split(task, Split::val, 1000);  // the parameters hold y again
  {
    const auto x = trainer.optimizer().eval_weights();
    EXPECT_NEAR(evaluate_split(task, Split::val, 1000).loss, reported, 1e-6);
  }
  EXPECT_GT(std::abs(at_y.loss - reported), 1e-4) << "x and y should differ after 32 steps";
  EXPECT_NEAR(evaluate_split(task, Split::val, 1000).loss, at_y.loss, 1e-12);
}

TEST(TrainerEvaluation, EvalsPerOctaveIsALogGridPlusTheFinalStep) {
  ToyTask task;
  RecordingReporter rec;
  auto c = testing::toy_config();
  c.schedule.epochs.reset();
  c.schedule.steps = 20;
  c.train.evals_per_octave = 1;  // replaces eval_every
  Trainer trainer(c, {}, task, rec);
  trainer.run();
  EXPECT_EQ(eval_steps(rec), (std::vector<int64_t>{1, 2, 4, 8, 16, 20}));
}

TEST(TrainerEvaluation, ATargetOnValidationAccuracyStopsTheRunWithAFullLastEvaluation) {
  auto task = task_with_val();
  RecordingReporter rec;
  auto c = testing::toy_config();
  c.schedule.epochs = 20.0;
  c.train.full_eval = "final";
  c.train.targets = {{"val_acc", 0.5}};
  c.train.stop_at_target = true;
  Trainer trainer(c, {}, task, rec);
  const auto outcome = trainer.run();
  EXPECT_EQ(outcome.status, RunStatus::done);
  EXPECT_LT(outcome.last_step, 160);
  ASSERT_EQ(rec.milestones.size(), 1u);
  EXPECT_EQ(rec.milestones[0].metric, "val_acc");
  EXPECT_EQ(rec.milestones[0].step, outcome.last_step);
  const auto& last = rec.evals.back();
  EXPECT_EQ(last.step, outcome.last_step);
  EXPECT_GE(*last.val_acc, 0.5);
  EXPECT_TRUE(last.test_acc.has_value());  // the run's last evaluation is a full one
  for (size_t i = 0; i + 1 < rec.evals.size(); ++i) EXPECT_LT(*rec.evals[i].val_acc, 0.5);
}

// Writes the stop file when a given step row is reported: a request arriving mid-run.
struct WriteStopFileAt : RecordingReporter {
  std::string path, text;
  int64_t at = -1;
  void step(const StepRecord& r) override {
    RecordingReporter::step(r);
    if (r.step == at) std::ofstream(path) << text;
  }
};

config::ExperimentConfig octave_config() {
  auto c = testing::toy_config();
  c.schedule.epochs.reset();
  c.schedule.steps = 32;
  c.train.evals_per_octave = 1;  // evaluations after 1, 2, 4, 8, 16, 32 updates
  c.train.full_eval = "final";
  return c;
}

TEST(TrainerEvaluation, AStopFileEndsTheRunAtTheFirstEvaluationAtOrPastItsStep) {
  TempDir dir;
  const auto stop = (dir.path / "stop").string();
  std::ofstream(stop) << "pruned 3\n";
  auto store = std::make_shared<CheckpointStore>((dir.path / "ckpt").string());
  auto c = octave_config();
  c.train.checkpoint_every = 1000;  // checkpoints on, none on the way: only the final one
  TrainerOptions o;
  o.stop_file = stop;
  o.checkpoints = store;
  o.run_id = "0123456789abcdef";
  ToyTask task;
  RecordingReporter rec;
  Trainer trainer(c, o, task, rec);
  const auto outcome = trainer.run();
  EXPECT_EQ(outcome.status, RunStatus::stopped);
  EXPECT_EQ(outcome.error, "pruned at step 4");
  EXPECT_EQ(outcome.stop_reason, "pruned");
  EXPECT_EQ(outcome.last_step, 4);
  EXPECT_EQ(rec.outcome.status, RunStatus::stopped);
  EXPECT_EQ(eval_steps(rec), (std::vector<int64_t>{1, 2, 4}));
  EXPECT_TRUE(rec.evals.back().test_acc.has_value());  // the stopping evaluation is the last
  EXPECT_FALSE(rec.evals.front().test_acc.has_value());
  ASSERT_EQ(rec.steps.size(), 4u);
  EXPECT_EQ(store->list().size(), 1u);  // the final checkpoint, after the last evaluation
}

TEST(TrainerEvaluation, AStopFileWrittenMidRunIsHonouredAtTheNextEvaluation) {
  TempDir dir;
  WriteStopFileAt rec;
  rec.path = (dir.path / "stop").string();
  rec.text = "stopped_by_race 0";
  rec.at = 4;  // during the 5th update: the evaluations after 1, 2 and 4 updates saw no file
  TrainerOptions o;
  o.stop_file = rec.path;
  ToyTask task;
  Trainer trainer(octave_config(), o, task, rec);
  const auto outcome = trainer.run();
  EXPECT_EQ(outcome.status, RunStatus::stopped);
  EXPECT_EQ(outcome.last_step, 8);
  EXPECT_EQ(outcome.error, "stopped_by_race at step 8");
  EXPECT_EQ(outcome.stop_reason, "stopped_by_race");
  EXPECT_EQ(eval_steps(rec), (std::vector<int64_t>{1, 2, 4, 8}));
}

TEST(TrainerEvaluation, AMalformedStopFileIsIgnoredWithOneNote) {
  TempDir dir;
  const auto stop = (dir.path / "stop").string();
  std::ofstream(stop) << "stop soon please";
  TrainerOptions o;
  o.stop_file = stop;
  ToyTask task;
  RecordingReporter rec;
  Trainer trainer(octave_config(), o, task, rec);
  const auto outcome = trainer.run();
  EXPECT_EQ(outcome.status, RunStatus::done);
  EXPECT_EQ(outcome.last_step, 32);
  ASSERT_EQ(rec.notes.size(), 1u);  // noted once, not at each of the six evaluations
  EXPECT_NE(rec.notes[0].find(stop), std::string::npos) << rec.notes[0];
  EXPECT_NE(rec.notes[0].find("ignored"), std::string::npos) << rec.notes[0];
}

}  // namespace
}  // namespace batchlab::train
