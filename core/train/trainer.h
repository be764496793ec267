// The common trainer: every job of every sweep runs through it, whatever the task.
//
// One update of step s: the learning rate is set from the schedule (a pure function of s, or of the
// training clock under a wall-clock budget); the global batch (a slice of the epoch's permutation) is
// processed as `accum` micro-batches whose losses are each divided by `accum` before backward, so the
// accumulated gradient equals that of one global-batch pass; then the optimizer steps. Evaluation
// (eval mode: a fixed training sample and the test split) runs every `train.eval_every` epochs and at
// the end, outside the training clock.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/config/experiment_config.h"
#include "core/optim/factory.h"
#include "core/optim/lr_schedule.h"
#include "core/train/checkpoint.h"
#include "core/train/data_order.h"
#include "core/train/layer_stats.h"
#include "core/train/noise_scale.h"
#include "core/train/reporter.h"
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
  int64_t world_size = 1;
  int64_t rank = 0;
  int64_t threads = 1;  // recorded only; the caller sets the thread pool
  // Set from a signal handler to end the run at the next step boundary as `preempted` (after a
  // checkpoint when a checkpoint store is given).
  const std::atomic<bool>* stop_requested = nullptr;
  std::string run_id;                             // stored in checkpoints; resume checks it
  std::shared_ptr<CheckpointStore> checkpoints;   // null: no checkpoints
  double checkpoint_every_s = 0.0;                // also checkpoint after this much wall time; 0 = off
  double noise_ema = 0.95;
};

// Result of one accumulated global batch.
struct AccumulatedStep {
  double loss = 0.0;  // mean training loss over the global batch
  int64_t items = 0;
};

// Runs forward/backward over the micro-batches (each loss / micro_indices.size()) and leaves the
// accumulated gradient in the parameters' .grad. Gradients are not zeroed here. With
// `micro_sq_norms`, also measures the squared norm of each micro-batch's own gradient (the
// difference of the running sum across its backward, times k) without disturbing the sum: one
// extra copy and one extra pass per micro-batch, for the gradient noise scale.
AccumulatedStep accumulate_gradients(Task& task, const std::vector<torch::Tensor>& micro_indices,
                                     std::optional<uint64_t> augment_seed,
                                     const std::vector<optim::NamedParameter>* params = nullptr,
                                     std::vector<double>* micro_sq_norms = nullptr);

// L2 norm over every parameter's gradient (0-dim tensor: no host synchronization).
torch::Tensor global_grad_norm(const std::vector<optim::NamedParameter>& params);

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
  bool step_once(int64_t step);  // false when the run diverged at this step
  void evaluate_and_report(int64_t updates_done);
  void save_checkpoint(int64_t updates_done);
  std::string first_nonfinite_parameter() const;
  bool budget_spent() const;
  double total_elapsed_s() const;

  TrainerOptions options_;
  Task& task_;
  Reporter& reporter_;
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
};

}  // namespace batchlab::train
