// Slurm submission: one sbatch job array over the jobs of a sweep that still need to run.
//
// Each array task runs `batchlab sweep slurm-task TASKS INDEX`, which runs `batchlab train` for
// the task's job with its records file on node-local disk (SQLite's WAL must not live on a shared
// filesystem), and publishes consistent snapshots of it into the job's run folder on the shared
// filesystem (results/ingest.h: snapshot_database) every `snapshot_interval` and at the end. No
// file is ever written from two hosts; `batchlab sweep status` on the submit host folds the
// snapshots into the sweep database. Checkpoints (plain files, one writer) go to the shared run
// folder, so a preempted task resumes wherever it runs next.
//
// <runs_dir>/slurm/ holds, per submission, <stamp>.tasks (one run folder per line, line i = array
// index i), <stamp>.sbatch and, in submissions.txt, "<slurm job id> <tasks file>" lines.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sweeps/expand.h"
#include "sweeps/run_layout.h"

namespace batchlab::sweeps {

struct SlurmOptions {
  std::string batchlab;  // absolute path of the batchlab executable on the compute nodes
  std::string partition;
  std::string time;                     // --time, e.g. "02:00:00"
  int gpus_per_job = 0;                 // --gres=gpu:G when > 0
  int max_parallel = 0;                 // the %M of --array (0: no limit)
  int cpus_per_task = 0;                // --cpus-per-task when > 0
  std::vector<std::string> extra_args;  // further #SBATCH lines, e.g. "--account=abc"
  bool submit = true;                   // false: write the script and task list only (--dry-run)
};

struct SlurmSubmission {
  std::string script;  // the sbatch script written
  std::string tasks;   // its task list
  std::string job_id;  // empty when not submitted
  size_t task_count = 0;
};

// Writes the task list and the sbatch script for `jobs` (their config.toml must be written) and
// submits it with `sbatch --parsable`. Throws batchlab::Error when sbatch fails or is missing.
SlurmSubmission submit_array(const std::string& sweep_name, const std::vector<const Job*>& jobs,
                             const RunLayout& layout, const SlurmOptions& options);

// The sbatch script text (exposed for tests).
std::string sbatch_script(const std::string& sweep_name, const std::string& tasks_path,
                          size_t task_count, const RunLayout& layout, const SlurmOptions& options);

// Run ids of earlier submissions whose array task is still pending or running according to
// squeue; nullopt when squeue cannot be asked (then every submitted job counts as active).
std::optional<std::set<std::string>> slurm_active_runs(const RunLayout& layout,
                                                       const std::string& sweep_name);

// Run ids that were ever submitted to Slurm from this runs folder.
std::set<std::string> slurm_submitted_runs(const RunLayout& layout);

// A spec `sweep submit --slurm` can submit. A study cannot be (docs/sweeps.md, "Studies"): its
// trials are decided as evaluations arrive, so its coordinator would have to run for the study's
// whole length as a job that submits trials and reads their records as they are written, and
// that is not built; an array of the cells would be a different experiment. Throws InputError
// saying so for a spec with [study].
void check_submittable(const SweepSpec& spec);

// One array task: the job in line `index` of `tasks_file`, run by `batchlab train` with its
// records on `local_dir`, snapshot into its run folder every `snapshot_interval` and at the end,
// SIGTERM forwarded to the job (preemption). Returns the job's exit code.
int run_slurm_task(const std::string& batchlab, const std::string& tasks_file, size_t index,
                   const std::string& local_dir, std::chrono::seconds snapshot_interval,
                   const std::atomic<int>* stop_requests);

}  // namespace batchlab::sweeps
