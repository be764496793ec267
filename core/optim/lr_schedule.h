// Learning-rate scaling rule and schedule: the LR is a pure function of (step or progress, config),
// set before every update, so a resumed run computes the same LR without replaying any history.
//
// Peak:    peak = base_lr * f(global_batch / base_batch), f = 1 (none), k (linear: Goyal et al.
// 2017),
//          sqrt(k) (sqrt: Krizhevsky 2014, Hoffer et al. 2017, the usual rule for Adam/LAMB).
// Warmup:  linear from warmup_start * peak at step 0 to peak at step W (Goyal et al. 2017), then
// Decay over the remaining steps, with p = (step - W) / (T - W) in [0, 1]:
//          constant  peak
//          linear    peak + (end_lr - peak) * p
//          poly      end_lr + (peak - end_lr) * (1 - p)^power      (LARS/LAMB papers use power 2 /
//          1) cosine    end_lr + (peak - end_lr) * (1 + cos(pi p)) / 2   (Loshchilov & Hutter 2017)
//          step      peak * gamma^(number of milestones reached), milestones in epochs
// Step s is the 0-based index of the update the LR is used for; the last update (s = T - 1) still
// has p < 1 (as in Hugging Face's and timm's schedulers), and at_step(T) is exactly the end value.
//
// Batch-schedule mode (config/batch_schedule.h, batch_phases.h): the axis is examples seen, not
// steps. The run is T = schedule.epochs x training examples long and ends at the first step
// boundary at or past T; the warmup is W = warmup_epochs x training examples (or warmup_fraction
// x T); milestones are epochs x training examples; the peak of an update is base_lr x
// f(its phase's batch / base_batch) (optim.scaling), so x = examples seen before the update runs
// the same curve across batch changes and the decay reaches end_lr exactly at the run's end.
//
// Budget mode (schedule.budget_s; Geiping & Goldstein 2022, "Cramming"): progress is the fraction
// of the wall-clock training budget used, the same curve is evaluated at that fraction (T = 1), and
// warmup is warmup_fraction of the progress. The trainer passes its training clock to current(); a
// budgeted schedule has no step count, so step decay and step/epoch-based warmup are config errors.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/config/batch_phases.h"
#include "core/config/optim_config.h"
#include "core/config/schedule_config.h"

namespace batchlab::optim {

// base_lr scaled by the batch-size rule. `optim` must have passed config validation and
// global_batch be > 0 (asserted: an internal batchlab::Error otherwise, config/preconditions.h).
double scaled_peak_lr(const config::OptimConfig& optim, int64_t global_batch);

class LrSchedule {
 public:
  // steps_per_epoch = optimizer steps (not micro-batches) per epoch; ignored when budgeted unless
  // the schedule is in epochs. `schedule` must have passed config validation (asserted, see
  // config/preconditions.h); ConfigError for what only the data size reveals: no full batch per
  // epoch, epochs that round to no step, or a warmup longer than the run in mixed units.
  LrSchedule(const config::ScheduleConfig& schedule, double peak_lr, int64_t steps_per_epoch);
  // A batch schedule's: progress in examples seen. `schedule` must have passed config validation
  // with the batch schedule (no steps, warmup_steps or budget); ConfigError for a schedule point
  // at or past the run's end, which only the data size reveals where validation could not tell.
  LrSchedule(const config::ScheduleConfig& schedule, const config::OptimConfig& optim,
             const config::BatchPhases& phases);

  bool budgeted() const { return budgeted_; }
  // 0 when budgeted, and for schedule.steps = 0 (no update). With a batch schedule: the steps
  // it takes to see the run's examples, and the first step past the warmup's.
  int64_t total_steps() const { return budgeted_ ? 0 : total_steps_; }
  int64_t warmup_steps() const { return budgeted_ ? 0 : warmup_steps_; }  // 0 when budgeted
  // With a batch schedule, the run's length and warmup in examples; 0 otherwise.
  int64_t total_examples() const { return total_examples_; }
  int64_t warmup_examples() const { return warmup_examples_; }
  // The LR at `examples` seen with the peak `peak` (batch-schedule mode's curve).
  double at_examples(int64_t examples, double peak) const;

  // LR used by the update of 0-based step `step` (steps past the end keep the end value).
  // Throws batchlab::Error when budgeted: there the LR follows the clock, see current().
  double at_step(int64_t step) const;
  // LR at a fraction in [0, 1] of the run (of its steps, or of its budget); clamped into [0, 1].
  double at_progress(double fraction) const;
  // What the trainer calls before every update: at_step(step), or at_progress(elapsed / budget).
  double current(int64_t step, double train_elapsed_s) const;
  // Fraction of the run done after `step` updates / `train_elapsed_s` seconds of training, in [0,
  // 1].
  double progress(int64_t step, double train_elapsed_s) const;
  // True when the run is over: all steps taken, or the budget spent.
  bool finished(int64_t step, double train_elapsed_s) const;

 private:
  // The curve at position x on an axis where warmup ends at w and the run at t (steps, or T = 1).
  double value_at(double x, double w, double t, double peak) const;
  bool by_examples() const { return phases_.has_value(); }

  config::ScheduleConfig cfg_;
  double peak_ = 0.0;
  bool budgeted_ = false;
  double budget_s_ = 0.0;
  int64_t total_steps_ = 0;
  int64_t warmup_steps_ = 0;
  double warmup_fraction_ = 0.0;      // budget mode
  std::vector<double> milestone_at_;  // step decay: milestone positions in steps (or examples)
  // Batch-schedule mode: the phases, each phase's peak, and the run in examples.
  std::optional<config::BatchPhases> phases_;
  std::vector<double> phase_peaks_;
  int64_t total_examples_ = 0;
  int64_t warmup_examples_ = 0;
};

}  // namespace batchlab::optim
