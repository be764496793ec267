// The common trainer: every job of every sweep runs through it, whatever the task.
//
// One update of step s, in named phases (step_once): the learning rate is set from the schedule (a
// pure function of s, or of the training clock under a wall-clock budget); the gradients are
// computed: the global batch (a slice of the epoch's permutation) as `accum` micro-batches whose
// losses are each divided by `accum` before backward, so the accumulated gradient equals that of
// one global-batch pass; the ranks agree on the step's facts; a diverged step ends the run before
// its update; the optimizer steps; the clock stops; measurements and records follow. The training
// clock covers exactly data loading, forward/backward, communication and the update: the per-layer
// statistics' copy of the weights before the update is taken with the clock paused.
// Evaluation runs outside the training clock, in eval mode (trainer_evaluation.cpp): on the
// validation split (data.val_size > 0) every time; on a fixed training sample and the test split
// every time, or only at the run's last evaluation (train.full_eval = "final"). It runs every
// train.eval_every epochs or on the log-spaced grid of train.evals_per_octave (eval_schedule.h),
// and at the end. After each one the trainer honours a stop request (--stop-file,
// stop_request.h): the run ends as `stopped`. With checkpoints on, a run with a validation split
// keeps best.pt, the weights at its best validation metric (best_weights.h), and a finished run
// checkpoints its final weights. A run of schedule.steps = 0 makes no update: it evaluates (and
// checkpoints) its starting weights.
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
#include <optional>
#include <string>
#include <vector>

#include "core/config/batch_config.h"
#include "core/config/batch_phases.h"
#include "core/config/data_config.h"
#include "core/config/optim_config.h"
#include "core/config/schedule_config.h"
#include "core/config/train_config.h"
#include "core/optim/factory.h"
#include "core/optim/lr_schedule.h"
#include "core/stop_request.h"
#include "core/train/accumulation.h"
#include "core/train/autocast.h"
#include "core/train/best_weights.h"
#include "core/train/checkpoint.h"
#include "core/train/data_order.h"
#include "core/train/data_parallel.h"
#include "core/train/eval_schedule.h"
#include "core/train/layer_stats.h"
#include "core/train/noise_scale.h"
#include "core/train/reporter.h"
#include "core/train/step_timer.h"
#include "core/train/task.h"

namespace batchlab::config {
struct ExperimentConfig;
}

namespace batchlab::train {

// The configuration sections the trainer reads, as the caller holds them (the trainer copies what
// it keeps). Built from a whole ExperimentConfig, or from the sections alone.
struct TrainerConfig {
  TrainerConfig(const config::ExperimentConfig& c);  // NOLINT(google-explicit-constructor)
  TrainerConfig(const config::DataConfig& d, const config::BatchConfig& b,
                const config::OptimConfig& o, const config::ScheduleConfig& s,
                const config::TrainConfig& t)
      : data(d), batch(b), optim(o), schedule(s), train(t) {}

  const config::DataConfig& data;  // seed (epoch order, augmentation), eval_train_samples
  const config::BatchConfig& batch;
  const config::OptimConfig& optim;
  const config::ScheduleConfig& schedule;
  const config::TrainConfig& train;  // train.device is not read: TrainerOptions::device is
};

// Runtime settings: none of them is part of the configuration or the run id.
struct TrainerOptions {
  c10::Device device{c10::DeviceType::CPU};  // this rank's device (train.device, resolved)
  int64_t eval_chunk = 1000;                 // examples per evaluation forward pass
  // Data parallelism: null for one process; the rank and world size come from it.
  std::shared_ptr<DataParallel> data_parallel;
  // Set from a signal handler to end the run at the next step boundary as `preempted` (after a
  // checkpoint when a checkpoint store is given).
  const std::atomic<bool>* stop_requested = nullptr;
  // A stop request file (contract C2), read after every evaluation; empty: none.
  std::string stop_file;
  std::string run_id;                            // stored in checkpoints; resume checks it
  std::shared_ptr<CheckpointStore> checkpoints;  // null: no checkpoints
  // The last step the run's records hold, when they may lag its checkpoints (a Slurm task's
  // records are published from node-local disk; a lost node loses what was not published yet):
  // resume from no checkpoint past it, so that every step is recorded. nullopt: no limit.
  std::optional<int64_t> records_end;
  double noise_ema = 0.95;
  // Called with the step at the measurement point before every update (where the per-layer
  // statistics copy the weights), with the training clock paused: whatever it costs is not
  // training time. Tests use it to check exactly that.
  std::function<void(int64_t step)> before_update_probe;
};

class Trainer {
 public:
  Trainer(const TrainerConfig& config, TrainerOptions options, Task& task, Reporter& reporter);

  // Loads the newest usable checkpoint, if any; returns the step it resumes from (0 if none).
  // Warnings (a corrupt newest checkpoint) go to the reporter's notes. When the checkpoint
  // directory holds checkpoints but none can be read, the run starts over from step 0: a note says
  // so, and started_over() tells why, for the run's record.
  int64_t resume();
  // Why this attempt starts from step 0 although the run had checkpoints (every one unreadable:
  // the count, the folder and each file's reason); nullopt otherwise.
  const std::optional<std::string>& started_over() const { return started_over_; }

  // Trains to the end (steps, epochs, budget, target or stop request). Divergence is an outcome;
  // other errors propagate.
  RunOutcome run();

  const RunGeometry& geometry() const { return geometry_; }
  optim::TrainingOptimizer& optimizer() { return *optimizer_; }

 private:
  // One step's gradients, left in the parameters' .grad, and what was measured along the way.
  struct Gradients {
    AccumulatedStep accumulated;
    optim::GradNorm norm;          // of the (averaged) gradient; not yet read by the host
    torch::Tensor local_sq;        // data parallel with noise scale: |own accumulated gradient|^2
    std::vector<double> micro_sq;  // one process with noise scale: |micro-batch gradient|^2 each
  };
  // What every rank agrees on at a step (one host read; data parallel: one all-reduce).
  struct StepAgreement {
    double loss = 0.0;           // mean over the global batch
    double grad_norm = 0.0;      // of the averaged gradient
    double local_sq_norm = 0.0;  // mean over ranks of |own accumulated gradient|^2 (world > 1)
    // Data parallel: decisions taken from the ranks' sums, so that every rank takes them alike.
    bool stop = false;            // a stop signal seen by any rank
    double train_s = 0.0;         // rank 0's training clock before this step
    bool checkpoint_due = false;  // rank 0's timed checkpoint is due
  };

  // The batch phases, LR schedule and optimizer (constructor); a batch schedule's phase applied
  // to the optimizer (set_lr); the records' epochs and examples after `updates` updates.
  double plan_batch_and_schedule(const TrainerConfig& config, int64_t train_size);
  void apply_batch_phase(int64_t step);
  double epochs_after(int64_t updates) const;
  int64_t samples_after(int64_t updates) const;

  // Phases of one step, in order (step_once).
  std::optional<StepAgreement> step_once(int64_t step, double clock);  // nullopt: diverged
  double set_lr(int64_t step, double clock);
  Gradients compute_gradients(int64_t step);
  StepAgreement agree_on_step(const Gradients& grads);
  std::optional<std::string> check_divergence(int64_t step, const StepAgreement& agreed);
  void measure_before_update(int64_t step);
  double stop_clock();
  void measure_after_update(int64_t step, const StepAgreement& agreed, const Gradients& grads);
  void record_step(int64_t step, double lr, const StepAgreement& agreed, double step_s,
                   bool always);
  std::optional<StepAgreement> end_diverged(int64_t step, double lr, const StepAgreement& agreed,
                                            const std::string& why);

  // Decisions of the loop in run(), from the last agreement where data parallelism needs one.
  double schedule_clock(const StepAgreement& last) const;
  bool stop_requested(const StepAgreement& last) const;
  bool checkpoint_due(int64_t updates_done, const StepAgreement& last) const;
  bool layer_stats_due(int64_t step) const;

  // Evaluation (trainer_evaluation.cpp). Returns true when the run ends at this evaluation: a
  // stop request, or every target reached under train.stop_at_target. `last`: the run ends here
  // anyway (its last step).
  bool evaluate_and_report(int64_t updates_done, bool last);
  void measure(Split split, const torch::Tensor& indices, std::optional<double>& loss,
               std::optional<double>& acc);
  void measure_train_and_test(EvalRecord& r);
  bool all_targets_reached_with(const EvalRecord& r) const;
  void record_milestones(const EvalRecord& r);
  void keep_best_weights(const EvalRecord& r);
  std::optional<StopRequest> poll_stop_request(int64_t updates_done);

  bool checkpoints_on() const;
  void save_checkpoint(int64_t updates_done);
  void note_start_over(const std::vector<std::string>& unreadable);
  void synchronize_start();
  void end_preempted(int64_t updates_done);
  void finish(int64_t updates_done);
  std::string first_nonfinite_parameter() const;

  config::TrainConfig train_;
  int64_t data_seed_ = 0;
  TrainerOptions options_;
  Task& task_;
  Reporter& reporter_;
  std::shared_ptr<DataParallel> dp_;  // null: one process
  int64_t rank_ = 0;
  std::unique_ptr<GradientSync> sync_;  // with dp_
  MixedPrecision precision_;
  std::unique_ptr<StepTimer> timer_;
  std::vector<optim::NamedParameter> params_;
  BatchGeometry batch_;  // the final (for a fixed batch: the only) phase's
  // The batch's phases (config/batch_phases.h): one for a fixed batch. Under a batch schedule,
  // the optimizer's config (its batch rules re-resolved per phase) and the phase applied last.
  std::unique_ptr<config::BatchPhases> phases_;
  config::OptimConfig optim_;
  int64_t applied_phase_ = -1;
  RunGeometry geometry_;
  std::unique_ptr<optim::LrSchedule> schedule_;
  std::unique_ptr<optim::TrainingOptimizer> optimizer_;
  torch::Tensor train_sample_;  // int64 [eval_train_samples]: fixed sample for the train metrics
  std::unique_ptr<EvalSchedule> evals_;
  std::string last_stop_problem_;  // a malformed stop file is noted once per content
  double checkpoint_every_s_ = 0.0;

  // Per-epoch order, cached for the epoch in progress.
  int64_t cached_epoch_ = -1;
  torch::Tensor permutation_;

  TrainerState state_;  // step, clocks, divergence reference, targets: what a checkpoint keeps
  std::chrono::steady_clock::time_point started_;
  std::chrono::steady_clock::time_point last_checkpoint_;
  std::unique_ptr<LayerStatsCollector> layer_stats_;
  std::unique_ptr<NoiseScaleEstimator> noise_;
  double last_loss_ = 0.0;  // last finite training loss
  // best.pt (runs with a validation split and checkpoints on): the rule and the best value so far.
  std::unique_ptr<BestWeightsRule> best_rule_;
  std::optional<double> best_value_;
  RunOutcome outcome_;
  std::optional<std::string> started_over_;
};

}  // namespace batchlab::train
