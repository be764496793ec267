// Typed rows, one struct per table, with every column of the schema's latest version. Nullable
// columns are std::optional; a NaN/inf value is kept in the double itself (see nonfinite.h), so
// "not measured" (nullopt) and "diverged" (NaN) stay apart.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/config/target.h"

namespace batchlab::results {

// runs.status values (DESIGN.md), plus `oom`, a failure kind of its own, and `stopped`: the run
// honoured a stop request (a study's race or pruning); a result, like diverged, never retried.
namespace run_status {
inline constexpr std::string_view kPlanned = "planned";
inline constexpr std::string_view kRunning = "running";
inline constexpr std::string_view kDone = "done";
inline constexpr std::string_view kFailed = "failed";
inline constexpr std::string_view kDiverged = "diverged";
inline constexpr std::string_view kPreempted = "preempted";
inline constexpr std::string_view kOom = "oom";
inline constexpr std::string_view kStopped = "stopped";
}  // namespace run_status

bool is_known_run_status(std::string_view status);
// The attempt is over (every status but planned and running).
bool is_final_run_status(std::string_view status);

// UTC now as ISO 8601 with milliseconds ("2024-05-01T12:34:56.789Z"); SQLite's date functions
// read it, and it sorts as text.
std::string utc_now();
// Seconds since the epoch of such a time (fractions kept); nullopt for other text.
std::optional<double> utc_seconds(const std::string& iso);

struct SweepRow {
  std::string sweep_id;
  std::string name;
  std::optional<std::string> spec_toml;
  std::optional<std::string> created_at;  // filled with utc_now() when absent on first insert
};

struct RunRow {
  std::string run_id;
  std::optional<std::string> sweep_id;
  std::string status{run_status::kPlanned};
  std::optional<std::string> config_toml;
  std::optional<std::string> model;
  std::optional<std::string> dataset;
  std::optional<std::string> optimizer;
  std::optional<std::int64_t> global_batch;
  std::optional<std::int64_t> micro_batch;
  std::optional<std::int64_t> accum_steps;
  std::optional<std::int64_t> world_size;
  std::optional<double> base_lr;
  std::optional<double> peak_lr;
  std::optional<std::string> scaling;
  std::optional<std::int64_t> warmup_steps;
  std::optional<std::int64_t> seed;
  // Read: always set. Write (upsert_run): nullopt lets the store count attempts; a value is stored
  // as given (for an ingest that replays records and must stay idempotent).
  std::optional<std::int64_t> attempts;
  std::optional<std::string> error;
  std::optional<std::string> host;
  std::optional<std::string> device;
  std::optional<std::string> git_sha;
  std::optional<std::string> torch_version;
  std::optional<std::string> started_at;
  std::optional<std::string> finished_at;
  // Schema version 4: a stopped run's stop request reason (core/stop_request.h); nullopt otherwise.
  std::optional<std::string> stop_reason;
  // Schema version 5: the cluster job of its latest submission (Slurm "123" or "123_4"); nullopt
  // for a run started by `sweep run` or by hand. A write without it keeps the stored one.
  std::optional<std::string> scheduler_job;
  // Schema version 6: why an attempt of the run started over from step 0 although the run had
  // checkpoints (none could be read: the files and their reasons); nullopt when none did. Set by
  // the attempt that started over; a write without it keeps the stored one, since the recorded
  // series begins there.
  std::optional<std::string> started_over;
  // Schema version 7: the accuracy of guessing (1 / classes of a classifier); nullopt for a task
  // without one (masked-LM accuracy has no single chance level).
  std::optional<double> chance_acc;
  // Schema version 2: the physical batch, data accounting and the training clock.
  std::optional<std::int64_t> threads;
  std::optional<std::int64_t> bn_group;
  std::optional<std::int64_t> train_size;
  std::optional<std::int64_t> steps_per_epoch;
  std::optional<std::int64_t> total_steps;
  std::optional<std::int64_t> samples_dropped_per_epoch;
  std::optional<std::int64_t> last_step;
  std::optional<double> train_s;  // training clock in seconds; survives restarts
};

struct StepRow {
  std::string run_id;
  std::int64_t step = 0;
  double epoch = 0.0;
  std::int64_t samples = 0;
  double wall_s = 0.0;  // training clock, excluding eval/checkpoint/logging
  std::optional<double> lr;
  std::optional<double> train_loss;
  std::optional<double> grad_norm;
  std::optional<double> samples_per_s;
};

struct EvalRow {
  std::string run_id;
  std::int64_t step = 0;
  double epoch = 0.0;
  std::int64_t samples = 0;
  double wall_s = 0.0;
  std::optional<double> train_loss;  // eval mode, fixed sample of the training set
  std::optional<double> train_acc;
  std::optional<double> test_loss;
  std::optional<double> test_acc;
  std::optional<double> gap_loss;  // test_loss - train_loss; filled on write when absent
  std::optional<double> gap_acc;   // train_acc - test_acc; filled on write when absent
  std::optional<double> eval_s;    // how long the evaluation took (not on the training clock)
  // Schema version 3: the held-out validation split (data.val_size); nullopt when there is none.
  std::optional<double> val_loss;
  std::optional<double> val_acc;
};

// gap_loss = test_loss - train_loss and gap_acc = train_acc - test_acc (DESIGN.md), where absent
// and both sides are known.
void fill_gaps(EvalRow& row);

struct LayerStatRow {
  std::string run_id;
  std::int64_t step = 0;
  std::string layer;
  std::optional<std::int64_t> numel;
  std::optional<double> weight_norm;
  std::optional<double> grad_norm;
  std::optional<double> ratio;  // weight_norm / grad_norm (the LARS figure)
  std::optional<double> trust_ratio;
  std::optional<double> update_norm;
};

struct NoiseRow {
  std::string run_id;
  std::int64_t step = 0;
  std::optional<std::int64_t> b_small;
  std::optional<std::int64_t> b_big;
  std::optional<double> g2;
  std::optional<double> trace_sigma;
  std::optional<double> b_simple;
};

struct MilestoneRow {
  std::string run_id;
  std::string metric;
  double target = 0.0;
  std::int64_t step = 0;
  double epoch = 0.0;
  std::int64_t samples = 0;
  double wall_s = 0.0;
};

// ---- scaling studies (schema version 3; docs/sweeps.md "Studies")

// study_cells.status
namespace cell_status {
inline constexpr std::string_view kSearching = "searching";
inline constexpr std::string_view kReached = "reached";
inline constexpr std::string_view kCensored = "censored";  // no trial reached within the cap
}  // namespace cell_status

// study_trials.outcome
namespace trial_outcome {
inline constexpr std::string_view kRunning = "running";
inline constexpr std::string_view kReached = "reached";
inline constexpr std::string_view kCapped = "capped";
inline constexpr std::string_view kPruned = "pruned";
inline constexpr std::string_view kDiverged = "diverged";
inline constexpr std::string_view kStoppedByRace = "stopped_by_race";
}  // namespace trial_outcome

bool is_known_cell_status(std::string_view status);
bool is_known_trial_outcome(std::string_view outcome);

// One learning-rate search: the grid point without the LR (seed included).
struct StudyCellRow {
  std::string cell_id;  // hash of the cell's resolved config without the LR
  std::string sweep_id;
  std::string optimizer;
  std::int64_t global_batch = 0;
  std::int64_t seed = 0;
  std::string cell_toml;  // the non-LR axis values that define the cell
  config::Target target;
  double lr_center = 0.0;
  double lr_factor = 2.0;
  std::int64_t cap_steps = 0;
  std::int64_t warmup_steps = 0;
  std::string status{cell_status::kSearching};
  std::optional<std::string> best_run_id;
  std::optional<double> best_lr;
  std::optional<double> steps_to_target;    // interpolated in log-step; set when reached
  std::optional<double> samples_to_target;  // steps_to_target x global_batch
  std::optional<std::string> updated_at;    // filled with utc_now() on write when absent
};

// One learning rate of a cell: base_lr = lr_center * lr_factor^lr_index.
struct StudyTrialRow {
  std::string run_id;
  std::string cell_id;
  double base_lr = 0.0;
  std::int64_t lr_index = 0;
  std::string outcome{trial_outcome::kRunning};
  // Updates trained: the last evaluated step, or the step a diverged run stopped at (between
  // evaluations), so that samples_trained = last_step x global_batch.
  std::optional<std::int64_t> last_step;
  std::optional<double> steps_to_target;        // interpolated crossing; set when reached
  std::optional<std::int64_t> samples_trained;  // updates trained x global_batch
  std::optional<std::int64_t> cap_samples;      // cap_steps x global_batch
  std::optional<std::string> reason;
  std::optional<std::string> decided_at;  // filled with utc_now() on write when absent
};

// ---- fixed-budget searches ([search], sweeps/study/budget_plan.h): every point of a cell trains
// the same schedule; successive halving compares them at the same step (rung) on a held-out metric.

// budget_cells.status
namespace budget_status {
inline constexpr std::string_view kSearching = "searching";
inline constexpr std::string_view kDone = "done";      // the best point ran the whole budget
inline constexpr std::string_view kFailed = "failed";  // no point kept a finite metric
}  // namespace budget_status

// budget_trials.outcome
namespace budget_outcome {
inline constexpr std::string_view kRunning = "running";    // in the search, or waiting for its rung
inline constexpr std::string_view kHalted = "halted";      // not promoted past its last rung
inline constexpr std::string_view kFinished = "finished";  // trained the whole budget
inline constexpr std::string_view kDiverged = "diverged";
}  // namespace budget_outcome

bool is_known_budget_status(std::string_view status);
bool is_known_budget_outcome(std::string_view outcome);

// One cell of a fixed-budget search: a grid point without the searched keys (seed included). The
// first seed's cell searches; a later seed's cell runs the first seed's best point once.
struct BudgetCellRow {
  std::string cell_id;
  std::string sweep_id;
  std::string optimizer;
  std::int64_t global_batch = 0;
  std::int64_t seed = 0;
  std::string cell_toml;  // the axis values that define it
  std::string series;     // its line: the coordinates without the batch and the seed
  std::int64_t budget_steps = 0;
  std::optional<double> epochs;  // the budget in epochs, when the schedule gives it so
  std::string rung_steps;        // "25,50,100,200": where the search compares its points
  std::int64_t eta = 2;
  std::int64_t points = 0;  // points searched (1 for a later seed's rerun)
  std::string knobs;        // one line per searched key: `key = [v1, v2, ...]` in the order tried
  std::string status{budget_status::kSearching};
  std::optional<std::string> best_run_id;
  std::optional<std::string> best_point;       // one line per searched key: `key = value`
  std::optional<std::string> first_seed_cell;  // a later seed's cell: whose best point it reruns
  std::int64_t trials = 0;                     // started so far
  std::int64_t samples_trained = 0;            // by all of them
  std::optional<std::string> updated_at;       // filled with utc_now() on write when absent
};

// One point of a cell: a run that may train in several stretches (rung by rung, resumed from its
// checkpoint), so its row is rewritten as it climbs.
struct BudgetTrialRow {
  std::string run_id;
  std::string cell_id;
  std::int64_t point_index = 0;
  std::string point;      // `key = value` lines
  std::int64_t rung = 0;  // the highest rung it trained to (or is training to)
  std::string outcome{budget_outcome::kRunning};
  std::optional<std::int64_t> last_step;
  std::optional<double> metric;  // the search metric at its last rung
  std::optional<std::int64_t> samples_trained;
  std::optional<std::string> decided_at;
};

}  // namespace batchlab::results
