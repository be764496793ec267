// What a study's coordinator on Slurm needs beyond the engine and its trial source: the record of
// its own Slurm jobs, the one-coordinator rule, its job script, and the database it works on.
//
// One coordinator per study, across hosts: the sweep's coordinator lock (a flock, run_layout.h)
// keeps out a second process on hosts that share file locks; the coordinator jobs recorded in
// <runs>/slurm/coordinator.txt, asked about with squeue, keep out one on a host that does not (a
// local `sweep run` on the login node while the coordinator job runs on a compute node). `sweep
// submit` checks both under the lock and records the job it submits before letting go, so two
// submits at once start one coordinator.
//
// The database (why: cli/sweep_study_slurm.h): worked on a node-local copy and published to the
// results path as consistent snapshots, each renamed into place (results/ingest.h).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "sweeps/run_layout.h"
#include "sweeps/scratch_dir.h"
#include "sweeps/slurm_options.h"

namespace batchlab::sweeps::study {

// The coordinator jobs submitted for the study in `layout`, oldest first.
std::vector<std::string> coordinator_jobs(const RunLayout& layout);
void record_coordinator_job(const RunLayout& layout, const std::string& job_id);

// The study's coordinator job queued or running now, `self` (the caller's own job) left out: ""
// for none or never submitted; the last recorded one when squeue does not answer, so that a second
// coordinator is never started beside a live one.
std::string live_coordinator(const RunLayout& layout, const std::string& sweep_name,
                             const std::string& self = "");

// Run ids of the study's trials queued or running in Slurm (empty when none or never submitted;
// every submitted one when squeue does not answer).
std::set<std::string> trials_in_slurm(const RunLayout& layout, const std::string& sweep_name);

// The coordinator job's own resources: one CPU, the trials' partition and extra arguments.
SlurmOptions coordinator_options(const SlurmSubmitSettings& settings);

// The coordinator's sbatch script: `batchlab sweep slurm-coordinator SPEC` with the options it was
// submitted with, requeued when preempted, SIGTERM ahead of the kill to publish once more.
struct CoordinatorJob {
  std::string sweep_name;
  std::string spec_path;  // absolute
  std::string results;    // the published database, absolute
  std::string batchlab;   // the executable on the nodes, absolute
  SlurmSubmitSettings settings;
};
std::string coordinator_script(const RunLayout& layout, const CoordinatorJob& job);

// The coordinator's working copy of the study database on node-local disk (a ScratchDir of its
// own: two coordinators never share one, whatever their hosts and pids), published to `shared`.
class PublishedDatabase {
 public:
  // Copies `shared` (consistently, whatever its journal mode) when it exists.
  explicit PublishedDatabase(std::string shared);
  PublishedDatabase(const PublishedDatabase&) = delete;
  PublishedDatabase& operator=(const PublishedDatabase&) = delete;

  const std::string& local() const { return local_; }
  const std::string& shared() const { return shared_; }
  // A consistent snapshot of the working copy, renamed over `shared` in one step.
  void publish() const;

 private:
  std::string shared_;
  ScratchDir dir_;  // removed, with the working copy, when the object goes
  std::string local_;
};

}  // namespace batchlab::sweeps::study
