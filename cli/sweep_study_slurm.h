// A study on a Slurm cluster (docs/sweeps.md, "Studies on Slurm"): `sweep submit --slurm` on a
// study submits its coordinator as one small Slurm job, `batchlab sweep slurm-coordinator`, which
// runs the study engine with every trial a Slurm job of its own (sweeps/study/slurm_source.h).
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

#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/sweep_context.h"
#include "sweeps/slurm_options.h"

namespace batchlab::cli {

// The options of `sweep submit --slurm` (sweeps/slurm_options.h: one table for a plain sweep and
// a study; the study-only ones are refused on a plain sweep), as the argument parser takes them.
std::vector<OptionSpec> slurm_submit_options();
using sweeps::SlurmSubmitSettings;
// Reads them; a UsageError listing every bad value. `study_flags` names the study-only flags given.
SlurmSubmitSettings slurm_submit_settings(const Args& args, std::vector<std::string>* study_flags);

// Every job's config valid for `ranks` data-parallel ranks (the batch split); InputError (exit 2)
// listing the ones that are not. Nothing to check for one rank.
void check_jobs_for_ranks(const SweepContext& ctx, int ranks);

// `sweep submit STUDY.toml --slurm ...`: checks the study and the options with the cluster, then,
// under the sweep's coordinator lock, submits the coordinator job (nothing when one is queued or
// running already) and records it. Nothing is written to the sweep database here.
int submit_study_slurm(const SweepContext& ctx, const std::string& spec_path,
                       const SlurmSubmitSettings& settings, bool dry_run);

// Internal: `batchlab sweep slurm-coordinator STUDY.toml [options]`, the coordinator job.
int cmd_sweep_slurm_coordinator(const std::vector<std::string>& argv);

}  // namespace batchlab::cli
