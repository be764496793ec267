// The trainer under a batch-size schedule (core/config/batch_schedule.h): each phase's batch,
// learning rate and optimizer hyperparameters (beta2 by its half-life, weight decay by the batch),
// records in examples seen, evaluations spaced in examples, and an exact resume from checkpoints
// before and after a batch change.
#include <gtest/gtest.h>
#include <torch/optim/adamw.h>

#include <atomic>
#include <cmath>
#include <memory>
#include <vector>

#include "core/config/batch_rules.h"
#include "core/config/experiment_config.h"
#include "core/train/checkpoint.h"
#include "core/train/trainer.h"
#include "tests/core/train/toy_task.h"
#include "tests/temp_dir.h"

namespace batchlab::train::batch_schedule_test {
namespace {

using testing::RecordingReporter;
using testing::ToyTask;

constexpr double kHalfLife = 200.0;  // examples
constexpr double kFloor = 0.5;

// 256 training examples. Batch 16 until 96 examples (6 steps), 32 until 320 (7 steps: 320 seen),
// then 64: 3 epochs (768 examples) are 6 + 7 + 7 = 20 steps.
config::ExperimentConfig scheduled() {
  config::ExperimentConfig c;
  c.batch.global = 64;
  c.batch.micro = 16;  // accumulation 1, 2 and 4
  c.batch.schedule = {{0, 16}, {96, 32}, {320, 64}};
  c.optim.name = "adamw";
  c.optim.base_lr = 0.01;
  c.optim.base_batch = 16;
  c.optim.scaling = "sqrt";
  c.optim.beta2_half_life = kHalfLife;
  c.optim.beta2_floor = kFloor;
  c.optim.weight_decay_scaling = "linear";
  c.optim.base_weight_decay = 0.01;
  c.optim.betas = config::resolved_betas(c);  // as the loader resolves them: at the final batch
  c.optim.weight_decay = config::resolved_weight_decay(c);
  c.schedule.epochs = 3.0;
  c.train.eval_every = 1.0;
  c.data.eval_train_samples = 64;
  return c;
}

// What the optimizer applies to the decayed group at each update (read before the update).
struct Applied {
  double lr = 0.0;
  double beta2 = 0.0;
  double weight_decay = 0.0;
};

std::vector<Applied> applied_per_step(Trainer*& trainer, RecordingReporter& rec, ToyTask& task,
                                      const config::ExperimentConfig& c) {
  std::vector<Applied> out;
  TrainerOptions options;
  options.before_update_probe = [&](int64_t) {
    for (auto& group : trainer->optimizer().optimizer().param_groups()) {
      const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
      if (o.weight_decay() == 0.0) continue;  // the no-decay group (biases)
      out.push_back({o.lr(), std::get<1>(o.betas()), o.weight_decay()});
      break;
    }
  };
  Trainer t(c, options, task, rec);
  trainer = &t;
  EXPECT_EQ(t.run().status, RunStatus::done);
  trainer = nullptr;
  return out;
}

TEST(BatchScheduleTrainer, RateBeta2AndWeightDecayFollowEachPhasesBatch) {
  ToyTask task;
  RecordingReporter rec;
  Trainer* trainer = nullptr;
  const auto applied = applied_per_step(trainer, rec, task, scheduled());
  ASSERT_EQ(applied.size(), 20u);
  EXPECT_EQ(rec.outcome.last_step, 20);
  EXPECT_EQ(rec.geometry.total_steps, 20);
  EXPECT_EQ(rec.geometry.batch.global, 64);  // the batch the run ends at
  for (int64_t step = 0; step < 20; ++step) {
    const int64_t batch = step < 6 ? 16 : step < 13 ? 32 : 64;
    const Applied& a = applied[static_cast<size_t>(step)];
    // Constant schedule: the peak by the sqrt rule from base_batch 16.
    EXPECT_DOUBLE_EQ(a.lr, 0.01 * std::sqrt(batch / 16.0)) << "step " << step;
    EXPECT_EQ(a.beta2, config::beta2_for_batch(kHalfLife, kFloor, batch)) << "step " << step;
    EXPECT_EQ(a.weight_decay, config::weight_decay_for_batch(0.01, 16, batch)) << "step " << step;
    EXPECT_DOUBLE_EQ(rec.steps[static_cast<size_t>(step)].lr, a.lr);
  }
  // beta2 differs between the phases (0.95, 0.89, 0.80: the floor 0.5 binds at none of them).
  EXPECT_GT(applied[0].beta2, applied[6].beta2);
  EXPECT_GT(applied[6].beta2, applied[13].beta2);
}

TEST(BatchScheduleTrainer, RecordsExamplesSeenAndEvaluatesEveryEpochOfExamples) {
  ToyTask task;
  RecordingReporter rec;
  Trainer t(scheduled(), TrainerOptions{}, task, rec);
  ASSERT_EQ(t.run().status, RunStatus::done);
  ASSERT_EQ(rec.steps.size(), 20u);
  const std::vector<int64_t> batch_of = {16, 16, 16, 16, 16, 16, 32, 32, 32, 32,
                                         32, 32, 32, 64, 64, 64, 64, 64, 64, 64};
  int64_t seen = 0;
  for (size_t i = 0; i < 20; ++i) {
    seen += batch_of[i];
    EXPECT_EQ(rec.steps[i].samples, seen) << "step " << i;
    EXPECT_DOUBLE_EQ(rec.steps[i].epoch, static_cast<double>(seen) / 256.0) << "step " << i;
  }
  // eval_every = 1 epoch = 256 examples: after the updates that reach 256 (step 11), 512 (16)
  // and 768 (20, the end).
  ASSERT_EQ(rec.evals.size(), 3u);
  EXPECT_EQ(rec.evals[0].step, 11);
  EXPECT_EQ(rec.evals[0].samples, 256);
  EXPECT_EQ(rec.evals[1].step, 16);
  EXPECT_EQ(rec.evals[2].step, 20);
  EXPECT_DOUBLE_EQ(rec.evals[2].epoch, 3.0);
}

TEST(BatchScheduleTrainer, APointPastTheRunsEndIsAConfigErrorOnceTheDataSizeIsKnown) {
  ToyTask task;
  RecordingReporter rec;
  auto c = scheduled();
  c.batch.schedule = {{0, 16}, {96, 32}, {768, 64}};  // 3 epochs of 256 end at 768
  try {
    Trainer t(c, TrainerOptions{}, task, rec);
    ADD_FAILURE() << "a point at the run's end was accepted";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("batch.schedule[2]"), std::string::npos) << what;
    EXPECT_NE(what.find("at or past the run's end (768 examples"), std::string::npos) << what;
  }
}

std::vector<torch::Tensor> parameters_of(Task& t) {
  std::vector<torch::Tensor> out;
  for (auto& p : t.named_parameters()) out.push_back(p.tensor.detach().clone());
  return out;
}

// Raises the stop flag after a given step, as a signal handler would.
struct StopAfterStep : RecordingReporter {
  std::atomic<bool>* flag = nullptr;
  int64_t at = 0;
  void step(const StepRecord& r) override {
    RecordingReporter::step(r);
    if (r.step == at) flag->store(true);
  }
};

TEST(BatchScheduleTrainer, ResumingInTheMiddleOfTheScheduleIsExact) {
  // A cosine decay with a warmup, so the LR differs at every step.
  auto c = scheduled();
  c.schedule.warmup_fraction = 0.1;
  c.schedule.decay = "cosine";
  ToyTask ref_task;
  RecordingReporter ref;
  Trainer(c, TrainerOptions{}, ref_task, ref).run();
  ASSERT_EQ(ref.steps.size(), 20u);

  // Stopped after update 5 (the checkpoint at 5 is in the first phase, the next update starts the
  // second) and after update 10 (inside the second phase).
  for (const int64_t stop_after : {4, 9}) {
    SCOPED_TRACE("stopped after step " + std::to_string(stop_after));
    test_support::TempDir dir("batch-schedule");
    auto store = std::make_shared<CheckpointStore>(dir.path.string());
    TrainerOptions options;
    options.run_id = "0123456789abcdef";
    options.checkpoints = store;
    auto with_checkpoints = c;
    with_checkpoints.train.checkpoint_every = 100;  // only the stop's checkpoint
    {
      std::atomic<bool> stop{false};
      ToyTask task;
      StopAfterStep stopper;
      stopper.flag = &stop;
      stopper.at = stop_after;
      TrainerOptions stopping = options;
      stopping.stop_requested = &stop;
      Trainer t(with_checkpoints, stopping, task, stopper);
      const auto outcome = t.run();
      ASSERT_EQ(outcome.status, RunStatus::preempted);
      ASSERT_EQ(outcome.last_step, stop_after + 1);
    }
    ToyTask task;
    RecordingReporter resumed;
    Trainer t(with_checkpoints, options, task, resumed);
    ASSERT_EQ(t.resume(), stop_after + 1);
    ASSERT_EQ(t.run().status, RunStatus::done);
    ASSERT_EQ(resumed.steps.size(), static_cast<size_t>(20 - stop_after - 1));
    // The same updates: LR, loss and examples step by step, and the final weights bit for bit.
    for (const auto& r : resumed.steps) {
      const auto& want = ref.steps[static_cast<size_t>(r.step)];
      EXPECT_EQ(r.lr, want.lr) << "step " << r.step;
      EXPECT_EQ(r.train_loss, want.train_loss) << "step " << r.step;
      EXPECT_EQ(r.samples, want.samples) << "step " << r.step;
    }
    const auto a = parameters_of(ref_task);
    const auto b = parameters_of(task);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << "param " << i;
  }
}

}  // namespace
}  // namespace batchlab::train::batch_schedule_test
