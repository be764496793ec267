// A study on a Slurm cluster (docs/sweeps.md, "Studies on Slurm"): `sweep submit --slurm` on a
// study submits its coordinator as one small Slurm job, `batchlab sweep slurm-coordinator`, which
// runs the study engine with every trial a Slurm job of its own (sweeps/study_slurm_source.h).
//
// Why a coordinator job and not `sweep run` on the login node: a study lasts as long as its longest
// chain of cells (hours to days at the papers' sizes); login nodes kill long processes and are
// shared, and a job is what Slurm preempts, requeues and accounts for. The cost is that the
// coordinator's host changes between submissions, so the sweep database must not be written in
// place on the shared filesystem (SQLite's WAL needs one host): the coordinator works on a copy on
// its node-local disk and publishes consistent snapshots of it to the sweep's results path every
// `--publish-every` seconds and when it ends, which is where `sweep status`, `report` and `serve`
// read it. A coordinator killed without warning loses at most the decisions since its last
// snapshot; they are pure functions of the stored rows, so its successor makes them again, with the
// same run ids, and adopts the trials still in the queue.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/sweep_context.h"
#include "sweeps/slurm.h"

namespace batchlab::cli {

// The options of `sweep submit --slurm` (a plain sweep and a study share them; the last four are
// a study's), and what the coordinator job is started with.
const std::vector<OptionSpec>& slurm_submit_options();
struct SlurmSubmitSettings {
  sweeps::SlurmOptions jobs;     // a sweep's array tasks, a study's trials (max_parallel: at once)
  std::string coordinator_time;  // --coordinator-time: the study coordinator job's --time
  int retries = 0;               // --retries: submissions again of a trial that crashed
  int snapshot_every = 10;       // --snapshot-every: seconds between a trial's record snapshots
  int publish_every = 30;        // --publish-every: seconds between the coordinator's snapshots
};
// Reads them; UsageError for a bad value. `study_flags` names the study-only flags given.
SlurmSubmitSettings slurm_submit_settings(const Args& args, std::vector<std::string>* study_flags);

// Every job's config valid for `ranks` data-parallel ranks (the batch split); InputError (exit 2)
// listing the ones that are not. Nothing to check for one rank.
void check_jobs_for_ranks(const SweepContext& ctx, int ranks);

// `sweep submit STUDY.toml --slurm ...`: checks the study and the options with the cluster, then
// submits the coordinator job (nothing when one is queued or running already). Nothing is written
// to the sweep database here.
int submit_study_slurm(const SweepContext& ctx, const std::string& spec_path,
                       const SlurmSubmitSettings& settings, bool dry_run);

// Internal: `batchlab sweep slurm-coordinator STUDY.toml [options]`, the coordinator job.
int cmd_sweep_slurm_coordinator(const std::vector<std::string>& argv);

// The Slurm jobs of a study submitted with `sweep submit --slurm`, for `sweep status` (nothing
// when it was never submitted to Slurm).
void print_study_slurm_jobs(const SweepContext& ctx);

// The study's coordinator job queued or running now ("" for none or never submitted; the last
// submitted one when squeue cannot be asked, so that a second coordinator is never started beside
// a live one).
std::string live_study_coordinator(const SweepContext& ctx);

// Run ids of the study's trials queued or running in Slurm (empty when none or never submitted;
// every submitted one when squeue cannot be asked).
std::set<std::string> study_trials_in_slurm(const SweepContext& ctx);

}  // namespace batchlab::cli
