// Slurm submission: one sbatch job array over the jobs of a sweep that still need to run.
//
// Each array task runs `batchlab sweep slurm-task TASKS INDEX` (slurm_task.h), which runs
// `batchlab train` for the task's job with its records file on node-local disk (SQLite's WAL must
// not live on a shared filesystem), and publishes consistent snapshots of it into the job's run
// folder on the shared filesystem (results/ingest.h: snapshot_database) every `snapshot_interval`
// and at the end. No file is ever written from two hosts; `batchlab sweep status` on the submit
// host folds the snapshots into the sweep database. Checkpoints (plain files, one writer) go to the
// shared run folder, so a preempted task resumes wherever it runs next.
//
// <runs_dir>/slurm/ holds, per submission, <stamp>.tasks (one run folder per line, line i = array
// index i), <stamp>.sbatch and, in submissions.txt, "<slurm job id> <tasks file>" lines.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sweeps/expand.h"
#include "sweeps/run_layout.h"

namespace batchlab::sweeps {

// The job names batchlab gives a sweep's jobs (squeue finds them by name): its array tasks and a
// study's trials `batchlab-<sweep>`, a study's coordinator `batchlab-<sweep>-coordinator`.
std::string slurm_job_name(const std::string& sweep_name);
std::string slurm_coordinator_job_name(const std::string& sweep_name);

struct SlurmOptions {
  std::string batchlab;  // absolute path of the batchlab executable on the compute nodes
  std::string job_name;  // --job-name ("" = slurm_job_name(sweep))
  std::string partition;
  std::string time;                     // --time, e.g. "02:00:00"
  int gpus_per_job = 0;                 // --gres=gpu:G when > 0 (per node)
  int ranks_per_job = 1;                // --ntasks: data-parallel ranks, started by `srun` when > 1
  int nodes_per_job = 0;                // --nodes when > 0
  int max_parallel = 0;                 // the %M of --array (0, not given: no limit)
  int cpus_per_task = 0;                // --cpus-per-task when > 0
  std::vector<std::string> extra_args;  // further #SBATCH lines, e.g. "--account=abc"
  int snapshot_every = 0;  // seconds between a task's record snapshots (0: slurm-task's default)
  bool submit = true;      // false: write the script and task list only (--dry-run)
};

// One resource option of a submission: the #SBATCH argument and the batchlab flag it came from
// (how a refusal is reported: slurm_check.h).
struct SbatchOption {
  std::string flag;      // "--partition debug", "--sbatch-arg --account=abc"
  std::string argument;  // "--partition=debug", "--account=abc"
};
// The user's resource options (partition, time, GPUs, CPUs, extra arguments), in script order.
std::vector<SbatchOption> sbatch_options(const SlurmOptions& options);

// A job of this user's queue (squeue), one line per array task.
struct SlurmQueueEntry {
  std::string job_id;          // the job's id; for an array task the array's id (%A)
  std::optional<size_t> task;  // the array task index, for a task of a job array
  std::string state;           // PENDING, RUNNING, COMPLETING, ...
  std::string name;
};
// Queued and running jobs named one of `names`; nullopt when squeue cannot be asked.
std::optional<std::vector<SlurmQueueEntry>> slurm_queue(const std::vector<std::string>& names);

// The states of jobs `job_ids` (array job ids) as `squeue -t all -j` gives them (every state,
// the finished ones too, until the controller forgets a job), by job id; a job squeue does not
// name is left out (all of them when Slurm has forgotten them); nullopt when squeue cannot be
// asked. One squeue for all. Why: a job wrongly taken for ended is submitted again beside itself,
// so a job missing from the listing by name (which shows only pending, running and completing
// jobs) is asked for by its id before it counts as ended.
std::optional<std::map<std::string, std::string>> slurm_job_states(
    const std::vector<std::string>& job_ids);

// Whether a job in `state` (as squeue names it) may still run: everything but the states a job
// ends in (COMPLETED, CANCELLED, FAILED, TIMEOUT, NODE_FAIL, PREEMPTED, BOOT_FAIL, DEADLINE,
// OUT_OF_MEMORY, REVOKED).
bool slurm_state_may_run(const std::string& state);

struct SlurmSubmission {
  std::string script;  // the sbatch script written
  std::string tasks;   // its task list
  std::string job_id;  // empty when not submitted
  size_t task_count = 0;
  // Slurm's output file of array task i (its stdout and stderr: where a job that never started
  // batchlab says why).
  std::string output(size_t task) const;
};

// Writes the task list and the sbatch script for `jobs` (their config.toml must be written) and
// submits it (slurm_commands.h: sbatch_submit, transient failures retried). Throws SbatchError
// when sbatch does not submit.
SlurmSubmission submit_array(const std::string& sweep_name, const std::vector<const Job*>& jobs,
                             const RunLayout& layout, const SlurmOptions& options);

// The sbatch script text (exposed for tests).
std::string sbatch_script(const std::string& sweep_name, const std::string& tasks_path,
                          size_t task_count, const SlurmOptions& options);

// Run ids of earlier submissions whose array task is still pending or running according to
// squeue; nullopt when squeue cannot be asked (then every submitted job counts as active).
std::optional<std::set<std::string>> slurm_active_runs(const RunLayout& layout,
                                                       const std::string& sweep_name);

// Every submission from this runs folder: Slurm job id -> the run ids of its array tasks, in task
// order (a later submission of the same id replaces an earlier one).
std::map<std::string, std::vector<std::string>> slurm_submissions(const RunLayout& layout);

// Run ids that were ever submitted to Slurm from this runs folder.
std::set<std::string> slurm_submitted_runs(const RunLayout& layout);

// The full path of a program found on PATH (execve does not search), or `name` itself when it is
// not found (a spawn then fails with a message naming it).
std::string program_on_path(const std::string& name);

}  // namespace batchlab::sweeps
