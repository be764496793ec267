// The cells of a fixed-budget search ([search]) and the configs of their points.
//
// The LAMB paper's protocol (You et al. 2020, section 4): every batch size trains the same number
// of epochs, and the learning rate and warmup are tuned for each (optimizer, batch). A spec with
// [search] expands like any sweep; its jobs are cells (the grid, seed included). Each cell of the
// first seed searches the product of
//   - lr_points learning rates base_lr x lr_factor^k, k = -floor((lr_points - 1) / 2) ...
//     ceil((lr_points - 1) / 2), around the job's own optim.base_lr (under optim.scaling the same
//     base_lr already moves the peak rate with the batch), and
//   - the values of every knob of [search.knobs] and of each [search.when."cond"] whose conditions
//     the cell's line matches,
// cut to `points` of them by a fixed pseudo-random subset when given. Every line must search the
// same number of points: a comparison of optimizers at unequal budgets says nothing about the
// optimizers (Wen et al. 2025; Nado et al. 2021), so unequal lines are a plan error.
//
// Successive halving (Jamieson and Talwalkar 2016; Li et al. 2018, "Hyperband", one bracket): the
// budget B (the job's schedule: schedule.epochs x steps per epoch) is split into rungs at steps
// r_k = min(B, r_0 x eta^k), r_0 = ceil(B / eta^(rungs - 1)); all points train to r_0, the best
// ceil(n / eta) by the held-out metric at r_0 go on to r_1 (resumed from their checkpoint, so the
// schedule they follow is the whole run's: warmup and decay over B, not over the rung), and so on
// until the last rung trains the survivors to B; the best there is the cell's point. Points are
// compared at the same step and on the same schedule, so a rung decision is the one the full run
// would make if the curves did not cross later, which is the method's known bias (a slow starter,
// e.g. a small rate under a long decay, can be cut early); docs/sweeps.md says what it costs.
//
// The seeds after the first rerun the first seed's best point for the whole budget, so every
// (line, batch) has a result per seed at one point chosen on the first seed's held-out data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sweeps/expand.h"
#include "sweeps/spec.h"

namespace batchlab::sweeps::study {

// One searched key and the values a line tries, in the order given (its edges: first and last).
struct KnobValues {
  std::string key;
  std::vector<std::string> values;  // TOML text
};

// One point of a line: a value for every searched key (optim.base_lr first).
struct BudgetPoint {
  std::vector<std::pair<std::string, std::string>> values;  // key -> TOML text
  std::string describe() const;                             // `key = value` lines
};

struct BudgetCell {
  size_t job = 0;  // its job in Plan::jobs (the cell's own config)
  std::string cell_id;
  std::string cell_toml;  // the axis values that define it
  std::string series;     // its line: the coordinates without batch.global and train.seed
  std::optional<size_t> first_seed;  // a later seed's cell: the first seed's at the same batch
  int64_t budget_steps = 0;
  std::optional<double> epochs;
  std::vector<int64_t> rung_steps;  // ascending, the last is budget_steps
  std::vector<KnobValues> knobs;    // the line's searched keys (optim.base_lr first)
  std::vector<BudgetPoint> points;  // the line's points
};

struct BudgetPlan {
  const SweepSpec* spec = nullptr;
  const Plan* plan = nullptr;
  PlanOptions options;
  std::vector<BudgetCell> cells;  // plan order

  const BudgetSearchSpec& search() const { return *spec->search; }
  const Job& job(size_t cell) const { return plan->jobs[cells[cell].job]; }
};

// r_k = min(budget, r_0 eta^k), r_0 = ceil(budget / eta^(rungs - 1)), without repeats.
std::vector<int64_t> rung_steps(int64_t budget, int64_t eta, int64_t rungs);

// The learning-rate exponents of `lr_points` points: -floor((n - 1) / 2) ... ceil((n - 1) / 2).
std::vector<int64_t> lr_exponents(int64_t lr_points);

// Cells and points of an expanded spec with [search]. Throws ConfigError, positioned in the spec,
// when lines would search different numbers of points, a cell has no fixed budget in steps, or
// `points` exceeds a line's product. `spec` and `plan` must outlive the result.
BudgetPlan plan_budget_search(const SweepSpec& spec, const Plan& plan, const PlanOptions& options);

// The trial of `point` in `cell`: the cell's config with the point's values, the evaluation at
// every rung (train.eval_every = r_0 steps), checkpoints kept (a promoted point resumes from its
// rung), and the final-only full evaluation. Throws ConfigError when the config is invalid.
Job make_budget_trial(const BudgetPlan& plan, size_t cell, const BudgetPoint& point);

}  // namespace batchlab::sweeps::study
