// The TrialSource of a study run on a Slurm cluster (`sweep submit --slurm` on a study; the
// coordinator itself is a Slurm job: cli/sweep_study_slurm.cpp). Every trial is its own Slurm job
// (a one-task array running `batchlab sweep slurm-task`, slurm.h), with the submission's resources.
//
// What the coordinator and a trial share is the run folder on the shared filesystem, each file with
// one writer: the trial publishes snapshots of its records (records.db, every `snapshot_every`
// seconds and at its end) and reads its stop file after every evaluation; the coordinator writes
// the stop file and config.toml, and `slurm_job` (the trial's latest Slurm job id).
//
// - Evaluations: read from the published snapshot of each running trial every `curve_interval`.
// - Stopping a trial: the stop file (RunLayout::stop_path); the trial answers at its next
//   evaluation and records `stopped`. One that has published an evaluation at or past the
//   requested step and is still in the queue `stop_grace` later has not answered (a hung process,
//   a stale file cache): it is cancelled with scancel and recorded as `stopped` for the request.
// - A trial's end: its job left the queue. Its snapshot is folded into the sweep database; a result
//   (done, diverged, stopped) goes to the engine. A trial that was preempted, cancelled (scancel)
//   or killed is submitted again under the same run id and resumes from the checkpoints in its run
//   folder; a crash is submitted again within `retries`. Every submission counts in runs.attempts,
//   written when it is made, so the bound `max_attempts` holds across coordinators: past it the
//   trial is `failed`, with a diagnosis that names its last job's Slurm output file.
// - A job that ended without publishing anything never ran batchlab (the binary or LibTorch not
//   visible on the node, an unwritable --output, a node failing at launch). When
//   `max_vanished_in_a_row` jobs in a row end that way the coordinator stops (fatal()) instead of
//   submitting more: the same mistake would sink every trial.
// - sbatch refusing for good (a MaxSubmitJobs limit), or the controller not answering after the
//   retries of slurm_commands.h, stops the coordinator the same way, with sbatch's message; the
//   trial not submitted is left for the next coordinator. Nothing recorded is lost.
// - The coordinator stopping (its job cancelled or preempted): nothing is cancelled. Its trials go
//   on in Slurm and report them as interrupted, so the engine records nothing for them; the
//   resubmitted coordinator decides the same trials again (same run ids) and adopts every one
//   whose `slurm_job` is still queued or running instead of submitting it again, or folds its
//   result if it ended meanwhile. No trial runs twice.
// - A job missing from squeue's listing counts as ended only when it has been missing from two
//   answers over kGonePolls intervals and `squeue -j` (which shows every state) does not name it in
//   a state it may still run in: a job wrongly taken for ended would be submitted again beside
//   itself.
// - Load on the scheduler: one squeue per `poll_interval` for all trials together (adoption
//   included), and one more in an interval where some job has been missing long enough, for all of
//   them; one sbatch per submission, one scancel per unanswered stop (docs/sweeps.md has the
//   measured figures).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "sweeps/local_runner.h"
#include "sweeps/slurm.h"
#include "sweeps/study/engine.h"

namespace batchlab::sweeps::study {

struct SlurmSourceOptions {
  SlurmOptions slurm;             // the trials' resources; max_parallel = trials queued at once
  size_t max_jobs = 16;           // trials submitted at once (queued or running)
  int retries = 0;                // resubmissions of a trial that crashed (failed)
  int max_attempts = 10;          // Slurm jobs per trial in all (runs.attempts), any cause
  int max_vanished_in_a_row = 3;  // jobs ending without records, in a row, before giving up
  const std::atomic<int>* stop_requests = nullptr;  // the coordinator was asked to stop
  std::chrono::milliseconds poll_interval{2000};    // how often squeue is asked
  std::chrono::milliseconds curve_interval{2000};   // how often running trials' evals are read
  std::chrono::seconds publish_interval{30};        // how often `publish` runs
  // How long a trial may leave a stop unanswered once it has published an evaluation after the
  // request, beyond the interval between its evaluations (it reads the file after each one).
  std::chrono::milliseconds stop_grace{120000};
  std::function<void()> publish;  // publishes the sweep database (the coordinator's snapshot)
};

class SlurmTrialSource : public TrialSource {
 public:
  SlurmTrialSource(SweepRecords& records, const RunLayout& layout, std::string sweep_name,
                   SlurmSourceOptions options, RunObserver& observer);
  ~SlurmTrialSource() override;

  size_t slots() const override;
  size_t running() const override;
  void start(const Job& trial, const std::optional<StopRequest>& stop) override;
  void request_stop(const std::string& run_id, const StopRequest& stop) override;
  SourceEvents poll() override;
  bool stopping() const override;
  // Why the source stopped on its own (trial jobs that never ran, sbatch refusing), or nullopt.
  const std::optional<std::string>& fatal() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The Slurm job of a trial's latest submission ("" when it was never submitted).
std::string trial_slurm_job(const RunLayout& layout, const std::string& run_id);

}  // namespace batchlab::sweeps::study
