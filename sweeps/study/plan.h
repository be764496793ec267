// The cells of a scaling study and the configs of their trials.
//
// A study spec expands like any sweep, but its jobs are cells, not runs: one per combination of
// the grid (which must not sweep the learning rate), seed included. Each cell gets a learning-rate
// search; every trial of a cell is the cell's config with optim.base_lr = centre x factor^k, the
// study's cap as schedule.steps, its warmup and a constant decay (unless the spec sets them), a
// log-spaced evaluation grid, the final-only full evaluation, and the study's target with
// stop_at_target. The seed is part of the cell, so the trials of a cell share their initial
// weights and their data order.
//
// Cells chain along a line (the cells that differ only in batch.global): a cell's centre is the
// best rate of the next smaller batch of its line, or [study] lr_center, or for the smallest batch
// the job's own optim.base_lr. Under a scaling rule the same base_lr already moves the peak rate
// by the rule, so the centre is carried over in base_lr terms.
//
// A batch ladder ([study.ladder]) plans every batch from start to ceiling, so cell ids and trial
// configs are fixed before anything runs; which of them open is the coordinator's decision
// (sweeps/study/ladder.h), per group of lines that differ only in the seed.
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sweeps/expand.h"
#include "sweeps/spec.h"

namespace batchlab::sweeps::study {

struct Cell {
  size_t job = 0;  // its job in Plan::jobs (the cell's own config, with the base LR)
  std::string cell_id;
  std::string cell_toml;           // the non-LR coordinates that define it
  std::string line;                // its coordinates without batch.global
  std::string group;               // ... and without train.seed: the lines a ladder moves together
  std::optional<size_t> previous;  // the cell of the next smaller batch in the same line
  // For a cell of a seed after the first: the first seed's cell at the same batch in the same
  // group (the seeds are the slowest-varying dimension, so it comes first in plan order).
  std::optional<size_t> first_seed;
  int64_t max_cap_steps = 0;  // from max_samples / max_steps (or the job's own schedule)
  // Under [study.bound]: true for a cell of a line the reference does not match (its cap is also
  // bounded by reference_cap), false for the reference lines' cells and without a bound.
  bool bounded = false;
};

struct StudyPlan {
  const SweepSpec* spec = nullptr;
  const Plan* plan = nullptr;
  PlanOptions options;
  std::vector<Cell> cells;              // plan order
  std::vector<std::string> trial_keys;  // the plan's coordinate keys and optim.base_lr

  const StudySpec& study() const { return *spec->study; }
  const Job& job(size_t cell) const { return plan->jobs[cells[cell].job]; }
};

// Cells of an expanded study spec. Throws ConfigError, positioned in the spec, when a cell cannot
// be measured: a validation target without data.val_size, no cap (neither max_samples nor
// max_steps, and a schedule without a step count). `plan` and `spec` must outlive the result.
StudyPlan plan_study(const SweepSpec& spec, const Plan& plan, const PlanOptions& options);

// Warmup of a trial of `cap_steps` under [study] warmup (a fraction of the cap, at least 5 steps
// when not 0, at most the cap).
int64_t study_warmup_steps(const StudySpec& study, int64_t cap_steps);

// The learning rate of point `lr_index` around `center`.
double lr_at(double center, double factor, int64_t lr_index);

// The trial of `cell` at `base_lr` with `cap_steps`: a complete job with its run id and canonical
// config. Throws ConfigError when the resulting config is invalid.
Job make_trial(const StudyPlan& plan, size_t cell, double base_lr, int64_t cap_steps);

// The first seed's cell at the same batch whose best rate cell `c` starts from under
// later_seeds = "neighbours" or "rerun_best"; nullopt under "search" and for a first seed's cell.
std::optional<size_t> rerun_source(const StudyPlan& plan, size_t c);

// Every cell's first trial (its centre at the full cap), nullopt where the centre is another
// cell's best rate: the first seed's (rerun_source), or without [study] lr_center the batch below
// on its line. Built before anything runs (`sweep plan`, the coordinator), so that a config the
// study cannot make is reported then (ConfigError); the engine's centres follow the same rule.
std::vector<std::optional<Job>> first_trials(const StudyPlan& plan);

// A trial of the cell `cell_job` from its resolved config table: parsed and validated as
// `batchlab train` would, with its derived values, canonical config, run id and columns, and the
// cell's combination and coordinates (the caller appends its own). Throws ConfigError when the
// config is invalid. One rule for the studies' trials and the fixed-budget searches' points.
Job trial_job(const toml::table& config, const std::string& source, const PlanOptions& options,
              const Job& cell_job);

// The cap of a new cell from the cells of its line that reached (docs/sweeps.md): with at least
// 3 distinct batch sizes reached, 3 x S(B) of the fit S(B) = S_min + E_min / B (weighted least
// squares on 1/B, weights 1/S^2), where S(B) is never taken below perfect scaling from a batch b
// that reached (the geometric mean of its steps times b / B, the fastest fall S_min >= 0 allows),
// and the cap never above `max_cap`; `max_cap` with fewer batches.
struct ReachedPoint {
  int64_t batch = 0;
  double steps = 0.0;
};
int64_t cap_from_fit(const std::vector<ReachedPoint>& reached, int64_t batch, int64_t max_cap);

// The steps the fit of `reached` predicts at `batch`, never below perfect scaling from a batch that
// reached (as above); nullopt with fewer than 3 distinct batches or no usable fit.
std::optional<double> predicted_steps(const std::vector<ReachedPoint>& reached, int64_t batch);

// [study.bound]: ceil(factor x the reference lines' predicted steps at `batch`), at least 1;
// nullopt while the reference lines have not reached at 3 batches (the cell keeps its own cap).
std::optional<int64_t> reference_cap(const std::vector<ReachedPoint>& reference, int64_t batch,
                                     double factor);

// Whether `job`'s coordinates satisfy every condition (values compared as TOML values): the
// lines a [search.when] clause or a [study.bound] reference names.
bool job_holds(const SweepSpec& spec, const Plan& plan, const Job& job,
               const std::vector<Match>& conditions);

}  // namespace batchlab::sweeps::study
