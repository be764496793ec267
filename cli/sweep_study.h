// The `batchlab sweep plan|run|status` views of a spec with a [study] section (docs/sweeps.md,
// "Studies"): its jobs are cells, each with a learning-rate search, run by the study coordinator.
#pragma once

#include <string>

#include "cli/sweep_context.h"
#include "cli/sweep_workers.h"
#include "sweeps/local_runner.h"

namespace batchlab::cli {

// `sweep plan`: the cells and the first trial of each (ConfigError, exit 2, when a cell's trials
// cannot be built).
int print_study_plan(const SweepContext& ctx, const std::string& format);

// `sweep run`: runs the study over `options.workers` workers; resumes what the database holds.
int run_study(const SweepContext& ctx, const sweeps::LocalRunOptions& options,
              const WorkerChoice& workers);

// `sweep status`: cells by status, trials by outcome, running trials with their progress.
int print_study_status(const SweepContext& ctx);

}  // namespace batchlab::cli
