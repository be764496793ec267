// The local scheduler of `batchlab sweep run`: a work queue over the jobs of a plan that are not
// settled yet, drained by N workers. A worker that becomes idle takes the next job at once (never
// batch-synchronous); each job is its own `batchlab train CONFIG --run-id ID --db RECORDS` process
// with one device per worker when devices are given (CUDA_VISIBLE_DEVICES).
//
// Policies (DESIGN.md, "Failure kinds"): `done`, `diverged` and `stopped` (a stop request
// honoured) are results and never rerun; a crash (`failed`: a signal, or an exit code other than
// 0 and 2) is retried up to `retries` times with its reason recorded; bad input (exit code 2) is
// never retried; `preempted` (interrupted) jobs are queued again. The first stop request ends the
// workers gracefully (SIGTERM: they record `preempted`), the second kills them.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "results/ingest.h"
#include "sweeps/expand.h"
#include "sweeps/process.h"
#include "sweeps/run_layout.h"
#include "sweeps/sweep_records.h"

namespace batchlab::sweeps {

struct LocalRunOptions {
  std::string batchlab;  // path of the batchlab executable the jobs run
  unsigned workers = 1;
  std::vector<std::string> devices;  // one per worker, in worker order; empty: not set
  int retries = 0;                   // extra attempts after a crash
  const std::atomic<int>* stop_requests = nullptr;  // 1: stop gracefully, 2 or more: kill
  std::chrono::milliseconds poll_interval{50};
  std::chrono::milliseconds progress_interval{2000};  // how often running jobs' progress is folded
};

// One job's attempt, as the observer sees it.
struct JobEvent {
  const Job* job = nullptr;
  size_t worker = 0;
  int attempt = 1;
  std::string status;  // after the attempt: done, diverged, failed, preempted
  std::string error;
  std::string exit;  // "exit code 0", "killed by signal 6 (SIGABRT)"
  double seconds = 0.0;
  bool retry = false;  // it goes back into the queue
};

class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void started(const JobEvent&) {}
  virtual void finished(const JobEvent&) {}
  virtual void stopping(int /*level*/) {}
};

struct RunSummary {
  size_t queued = 0;   // jobs that needed to run
  size_t settled = 0;  // jobs skipped because they were already done or diverged
  size_t done = 0;
  size_t diverged = 0;
  size_t failed = 0;
  size_t preempted = 0;
  bool stopped = false;  // a stop request ended the run early
};

// ---- one job attempt, shared by run_local and the study coordinator (sweeps/study/trial_source.h)

// Statuses after which a job runs again (a crash within its retries, an interruption).
bool is_rerunnable(const std::string& status);

// Settles what an earlier process of `run_id` left behind: records still saying `running` (its
// process is gone: the caller holds the job lock) become `preempted`, and the records are folded
// into the sweep database. The folded run, or nullopt when there is no records file.
std::optional<results::IngestedRun> fold_leftover(SweepRecords& records, const RunLayout& layout,
                                                  const std::string& run_id);

struct AttemptSpec {
  const Job* job = nullptr;
  size_t worker = 0;
  int attempt = 1;
  std::vector<std::string> extra_args;  // appended to `batchlab train CONFIG --run-id ID --db DB`
};

// Writes the job's config and a log header, records the attempt as `running` and starts
// `batchlab train` with the job lock's descriptor inherited. Throws batchlab::Error when the
// process cannot be started.
ChildProcess spawn_attempt(SweepRecords& records, const RunLayout& layout,
                           const LocalRunOptions& options, const std::string& sweep_name,
                           const AttemptSpec& attempt, const FileLock& lock);

// After an attempt's process ended: records that still say `running` get `failed` (a crash) or
// `preempted` (`stopping`), the records are folded, and `event` gets status, error and exit.
void settle_attempt(SweepRecords& records, const RunLayout& layout, const Job& job,
                    const ExitStatus& exit, bool stopping, JobEvent& event);

// Runs every unsettled job of `plan` (reconcile() first). Throws batchlab::Error when a job
// process cannot be started at all (e.g. a wrong executable path).
RunSummary run_local(const Plan& plan, SweepRecords& records, const RunLayout& layout,
                     const LocalRunOptions& options, RunObserver& observer);

}  // namespace batchlab::sweeps
