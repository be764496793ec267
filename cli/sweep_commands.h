// The `batchlab sweep` subcommands and what they share.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sweeps/expand.h"

namespace batchlab::cli {

int cmd_sweep_plan(const std::vector<std::string>& args);
int cmd_sweep_run(const std::vector<std::string>& args);
int cmd_sweep_status(const std::vector<std::string>& args);
int cmd_sweep_submit(const std::vector<std::string>& args);
// Makespans of a study under both scheduling orders, replayed from a finished run's records.
int cmd_sweep_simulate(const std::vector<std::string>& args);
// The search rules' cost against a plain stop_at_target grid, replayed from its recording.
int cmd_sweep_cost(const std::vector<std::string>& args);
// Internal: one task of a Slurm job array (what the generated sbatch script runs).
int cmd_sweep_slurm_task(const std::vector<std::string>& args);

// run_id -> status of every run the sweep database holds for `sweep_id` (empty without a
// database). Read-only: safe beside a running coordinator.
std::map<std::string, std::string> recorded_statuses(const std::string& db_path,
                                                     const std::string& sweep_id);

// Recorded runs of the sweep that the plan no longer has, as (run_id, status).
std::vector<std::pair<std::string, std::string>> stale_runs(
    const sweeps::Plan& plan, const std::map<std::string, std::string>& recorded);

}  // namespace batchlab::cli
