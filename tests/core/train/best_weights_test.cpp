// best.pt: the weights at the best validation metric (core/train/best_weights.h), kept beside the
// checkpoints of runs with a validation split; and a run of schedule.steps = 0, which evaluates and
// checkpoints its starting weights.
#include "core/train/best_weights.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/errors.h"
#include "core/train/checkpoint.h"
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

EvalRecord eval_with(std::optional<double> val_loss, std::optional<double> val_acc) {
  EvalRecord r;
  r.val_loss = val_loss;
  r.val_acc = val_acc;
  r.test_acc = 0.99;  // never selected on
  return r;
}

TEST(BestWeightsRule, ValidationLossUnlessTheTargetIsAValidationMetric) {
  const BestWeightsRule plain({});
  EXPECT_EQ(plain.metric(), "val_loss");
  EXPECT_EQ(plain.improvement(eval_with(0.5, 0.1), std::nullopt), 0.5);
  EXPECT_EQ(plain.improvement(eval_with(0.4, 0.1), 0.5), 0.4);
  EXPECT_EQ(plain.improvement(eval_with(0.5, 0.9), 0.5), std::nullopt);  // only strictly better
  EXPECT_EQ(plain.improvement(eval_with(std::nullopt, 0.9), 0.5), std::nullopt);
  EXPECT_EQ(plain.improvement(eval_with(std::nan(""), 0.9), std::nullopt), std::nullopt);

  const BestWeightsRule on_test({{"test_acc", 0.9}});
  EXPECT_EQ(on_test.metric(), "val_loss");
  const BestWeightsRule on_val_acc({{"val_acc", 0.9}, {"val_loss", 0.2}});
  EXPECT_EQ(on_val_acc.metric(), "val_acc");
  EXPECT_EQ(on_val_acc.improvement(eval_with(0.1, 0.8), 0.7), 0.8);  // accuracy: higher is better
  EXPECT_EQ(on_val_acc.improvement(eval_with(0.1, 0.6), 0.7), std::nullopt);
}

// The toy run (8 steps per epoch, 4 epochs) with a validation split and checkpoints on.
struct BestRun {
  TempDir dir;
  ToyTask task{256, 128, 7, torch::kFloat32, 96};
  RecordingReporter rec;
  std::shared_ptr<CheckpointStore> store = std::make_shared<CheckpointStore>(dir.path.string());

  RunOutcome run(config::ExperimentConfig c) {
    TrainerOptions o;
    o.checkpoints = store;
    o.run_id = "bestrun";
    Trainer trainer(c, o, task, rec);
    trainer.resume();
    return trainer.run();
  }
};

config::ExperimentConfig checkpointed() {
  auto c = testing::toy_config();
  c.train.checkpoint_every = 100;  // on; in practice only the final checkpoint
  c.train.eval_every = 0.5;
  c.optim.base_lr = 0.5;
  return c;
}

TEST(BestWeights, BestPtHoldsTheWeightsOfTheLowestValidationLoss) {
  BestRun r;
  ASSERT_EQ(r.run(checkpointed()).status, RunStatus::done);
  const auto best =
      std::min_element(r.rec.evals.begin(), r.rec.evals.end(),
                       [](const auto& a, const auto& b) { return *a.val_loss < *b.val_loss; });
  const auto record = r.store->read_best("bestrun");
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(record->metric, "val_loss");
  EXPECT_EQ(record->step, best->step);
  EXPECT_DOUBLE_EQ(record->value, *best->val_loss);
  EXPECT_FALSE(r.store->read_best("another-run").has_value());

  // Its weights give that validation loss again (the same task data, fresh weights); the final
  // checkpoint's are the last weights.
  ToyTask reloaded(256, 128, 7, torch::kFloat32, 96);
  const double untrained = [&] {
    torch::NoGradGuard no_grad;
    reloaded.model().eval();
    return reloaded.forward(reloaded.make_batch(Split::val, torch::arange(96), std::nullopt))
        .loss.item<double>();
  }();
  EXPECT_GT(std::abs(untrained - *best->val_loss), 1e-3);
  EXPECT_EQ(load_model_weights(r.store->best_path(), "bestrun", reloaded.model()), best->step);
  reloaded.model().eval();
  torch::NoGradGuard no_grad;
  const auto batch = reloaded.make_batch(Split::val, torch::arange(96), std::nullopt);
  EXPECT_NEAR(reloaded.forward(batch).loss.item<double>(), *best->val_loss, 1e-6);
  EXPECT_EQ(load_model_weights(r.store->list().front(), "bestrun", reloaded.model()), 32);
  EXPECT_THROW(load_model_weights(r.store->best_path(), "another-run", reloaded.model()),
               batchlab::CheckpointError);
}

TEST(BestWeights, NoneWithoutAValidationSplitOrWithoutCheckpoints) {
  TempDir dir;
  ToyTask task;  // no validation split
  RecordingReporter rec;
  TrainerOptions o;
  o.checkpoints = std::make_shared<CheckpointStore>(dir.path.string());
  o.run_id = "noval";
  Trainer(checkpointed(), o, task, rec).run();
  EXPECT_FALSE(fs::exists(o.checkpoints->best_path()));
  EXPECT_FALSE(o.checkpoints->list().empty());

  BestRun off;
  auto c = checkpointed();
  c.train.checkpoint_every = 0;
  off.run(c);
  EXPECT_FALSE(fs::exists(off.store->best_path()));
}

TEST(BestWeights, AResumedRunKeepsTheBestValueItHadAlready) {
  BestRun r;
  auto c = checkpointed();
  c.schedule.epochs = 2.0;
  c.train.checkpoint_every = 4;
  ASSERT_EQ(r.run(c).status, RunStatus::done);
  // A best value no evaluation can beat, as if an earlier stretch of the run had reached it.
  r.store->save_best("bestrun", {3, "val_loss", -1.0}, r.task.model());
  c.schedule.epochs = 4.0;  // the run goes on from its step-16 checkpoint and evaluates 4 times
  const size_t evals_before = r.rec.evals.size();
  ASSERT_EQ(r.run(c).status, RunStatus::done);
  EXPECT_GE(r.rec.evals.size(), evals_before + 4);
  const auto best = r.store->read_best("bestrun");
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->step, 3);
  EXPECT_EQ(best->value, -1.0);
}

TEST(ZeroSteps, ARunWithoutUpdatesEvaluatesAndCheckpointsItsStartingWeights) {
  BestRun r;
  const torch::Tensor start = r.task.net().fc1->weight.detach().clone();
  auto c = checkpointed();
  c.schedule.epochs.reset();
  c.schedule.steps = 0;
  const auto outcome = r.run(c);
  EXPECT_EQ(outcome.status, RunStatus::done);
  EXPECT_EQ(outcome.last_step, 0);
  EXPECT_TRUE(r.rec.steps.empty());
  ASSERT_EQ(r.rec.evals.size(), 1u);
  EXPECT_EQ(r.rec.evals[0].step, 0);
  EXPECT_TRUE(r.rec.evals[0].test_loss.has_value());
  ASSERT_EQ(r.store->list().size(), 1u);
  ToyTask other(256, 128, 11, torch::kFloat32, 96);
  EXPECT_EQ(load_model_weights(r.store->list().front(), "bestrun", other.model()), 0);
  EXPECT_TRUE(torch::equal(other.net().fc1->weight, start));
}

}  // namespace
}  // namespace batchlab::train
