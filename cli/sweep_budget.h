// The `batchlab sweep plan|run` views of a spec with a [search] section (docs/sweeps.md,
// "Fixed-budget searches"): its jobs are cells, each searched by successive halving at the same
// budget, run by the budget coordinator (sweeps/study/budget_engine.h).
#pragma once

#include <string>

#include "cli/sweep_context.h"
#include "cli/sweep_workers.h"
#include "sweeps/local_runner.h"
#include "sweeps/study/budget_plan.h"

namespace batchlab::cli {

// The cells with every first-seed point's config built: a config the search cannot make is bad
// input (ConfigError, exit 2), reported before anything runs or is recorded.
sweeps::study::BudgetPlan checked_budget_plan(const SweepContext& ctx);

// `sweep plan`: the cells, their budgets, rungs and points, and each line's knobs.
int print_budget_plan(const SweepContext& ctx, const std::string& format);

// `sweep status`: the cells by status with each one's trials, samples and best point so far.
int print_budget_status(const SweepContext& ctx);

// `sweep run`: runs the search over `options.workers` workers; resumes what the database holds.
int run_budget_search(const SweepContext& ctx, const sweeps::LocalRunOptions& options,
                      const WorkerChoice& workers);

}  // namespace batchlab::cli
