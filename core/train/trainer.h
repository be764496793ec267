// The common trainer: every job of every sweep runs through it, whatever the task.
//
// One update of step s: the learning rate is set from the schedule (a pure function of s, or of the
// training clock under a wall-clock budget); the global batch (a slice of the epoch's permutation)
// is processed as `accum` micro-batches whose losses are each divided by `accum` before backward,
// so the accumulated gradient equals that of one global-batch pass; then the optimizer steps.
// Evaluation (eval mode: a fixed training sample and the test split) runs every `train.eval_every`
// epochs and at the end, outside the training clock.
//
// Data parallel (options.data_parallel set): every rank runs a Trainer over its shard of each
// global batch (data_order.h); the gradients are averaged across ranks by bucketed all-reduce
// started during the last micro-batch's backward; the parameters and buffers start from rank 0's
// (broadcast at the start and after a resume). Once per step the ranks sum a few scalars (the
// loss, the stop and checkpoint decisions, the local gradient norm for the noise scale), so every
// decision that changes control flow (divergence, preemption, the wall-clock budget, timed
// checkpoints, targets) is taken identically on every rank. Evaluation is sharded across the ranks
// and reduced; floating-point buffers (batch-norm running statistics) are averaged before every
// evaluation and checkpoint. Records go through the reporter the caller gives each rank (the CLI
// gives rank 0 the real one); rank 0 writes the checkpoint, every rank its own RNG state.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/config/experiment_config.h"
#include "core/optim/factory.h"
#include "core/optim/lr_schedule.h"
#include "core/train/accumulation.h"
#include "core/train/autocast.h"
#include "core/train/checkpoint.h"
#include "core/train/data_order.h"
#include "core/train/data_parallel.h"
#include "core/train/layer_stats.h"
#include "core/train/noise_scale.h"
#include "core/train/reporter.h"
#include "core/train/step_timer.h"
#include "core/train/task.h"

namespace batchlab::train {

struct TrainerOptions {
  config::BatchConfig batch;
  config::OptimConfig optim;
  config::ScheduleConfig schedule;
  config::TrainConfig train;
  int64_t data_seed = 0;
  int64_t eval_train_samples = 10000;
  int64_t eval_chunk = 1000;  // examples per evaluation forward pass
  // Data parallelism: null for one process. When set, world_size and rank are taken from it.
  std::shared_ptr<DataParallel> data_parallel;
  int64_t world_size = 1;
  int64_t rank = 0;
  int64_t threads = 1;  // recorded only; the caller sets the thread pool
  // Set from a signal handler to end the run at the next step boundary as `preempted` (after a
  // checkpoint when a checkpoint store is given).
  const std::atomic<bool>* stop_requested = nullptr;
  std::string run_id;                            // stored in checkpoints; resume checks it
  std::shared_ptr<CheckpointStore> checkpoints;  // null: no checkpoints
  double checkpoint_every_s = 0.0;  // also checkpoint after this much wall time; 0 = off
  double noise_ema = 0.95;
};

class Trainer {
 public:
  Trainer(TrainerOptions options, Task& task, Reporter& reporter);

  // Loads the newest usable checkpoint, if any; returns the step it resumes from (0 if none).
  // Warnings (a corrupt newest checkpoint) go to the reporter's notes.
  int64_t resume();

  // Trains to the end (steps, epochs, budget, target or stop request). Divergence is an outcome;
  // other errors propagate.
  RunOutcome run();

  const RunGeometry& geometry() const { return geometry_; }
  optim::TrainingOptimizer& optimizer() { return *optimizer_; }

 private:
  // Rank-wide facts of one step: every rank gets the same values.
  struct StepAgreement {
    double loss = 0.0;           // mean over the global batch
    double grad_norm = 0.0;      // of the averaged gradient
    double local_sq_norm = 0.0;  // mean over ranks of |own accumulated gradient|^2 (world > 1)
  };

  bool step_once(int64_t step);  // false when the run diverged at this step
  StepAgreement agree_on_step(const AccumulatedStep& acc, const torch::Tensor& grad_norm,
                              const torch::Tensor& local_sq);
  void evaluate_and_report(int64_t updates_done);
  void save_checkpoint(int64_t updates_done);
  void synchronize_start();
  std::string first_nonfinite_parameter() const;
  bool budget_spent() const;
  bool stop_requested() const;
  double schedule_clock() const;  // the training clock every rank agrees on
  double total_elapsed_s() const;

  TrainerOptions options_;
  Task& task_;
  Reporter& reporter_;
  std::shared_ptr<DataParallel> dp_;    // null: one process
  std::unique_ptr<GradientSync> sync_;  // with dp_
  c10::Device device_{c10::DeviceType::CPU};
  MixedPrecision precision_;
  std::unique_ptr<StepTimer> timer_;
  std::vector<optim::NamedParameter> params_;
  BatchGeometry batch_;
  RunGeometry geometry_;
  std::unique_ptr<optim::LrSchedule> schedule_;
  std::unique_ptr<optim::TrainingOptimizer> optimizer_;
  torch::Tensor train_sample_;  // int64 [eval_train_samples]: fixed sample for the train metrics
  int64_t eval_every_steps_ = 1;

  // Per-epoch order, cached for the epoch in progress.
  int64_t cached_epoch_ = -1;
  torch::Tensor permutation_;

  TrainerState state_;  // step, clocks, divergence reference, targets: what a checkpoint keeps
  std::chrono::steady_clock::time_point started_;
  std::chrono::steady_clock::time_point last_checkpoint_;
  std::unique_ptr<LayerStatsCollector> layer_stats_;
  std::unique_ptr<NoiseScaleEstimator> noise_;
  bool stop_for_target_ = false;
  double last_loss_ = 0.0;  // last finite training loss
  RunOutcome outcome_;
  // Data parallel: rank 0's training clock as of the last step's agreement, and the decisions taken
  // there (a stop signal seen by any rank; a timed checkpoint due on rank 0).
  double agreed_train_s_ = 0.0;
  bool agreed_stop_ = false;
  bool agreed_checkpoint_ = false;
};

}  // namespace batchlab::train
