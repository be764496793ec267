// The real TrialSource of `batchlab sweep run` on a study: every trial is a `batchlab train`
// process with its own run folder and records file, as in run_local (and with the same attempt
// handling: local_runner.h), started with `--stop-file <run dir>/stop` (RunLayout::stop_path;
// contract C2).
//
// How the coordinator learns of evaluations: while a trial runs, its records file is read
// read-only (SQLite WAL: the reader neither blocks nor is blocked by the job writing it) every
// `curve_interval`, and its evaluation rows go to the engine. How it stops a trial: the request
// `REASON STEP` is written to the stop file atomically (a temporary file, then a rename); the
// trainer reads it after every evaluation. When a trial's process ends, its records are folded
// into the sweep database (ingest) and its final rows go to the engine.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sweeps/local_runner.h"
#include "sweeps/study/engine.h"

namespace batchlab::sweeps::study {

struct ProcessSourceOptions {
  LocalRunOptions run;  // executable, workers, devices, retries, stop requests, intervals
  std::chrono::milliseconds curve_interval{250};  // how often running trials' evals are read
};

// A trial's evaluations (step, val_acc, val_loss), read from its records file without writing to
// it: the live file of a local trial (SQLite WAL: the reader neither blocks nor is blocked by the
// job) or the published snapshot of a Slurm one. nullopt while the file or its tables do not exist
// yet.
std::optional<std::vector<results::EvalRow>> read_trial_evals(const std::string& records,
                                                              const std::string& run_id);

// A trial's end as the sweep database holds it once its records were folded: status, error, stop
// reason, last step and evaluation rows.
TrialEnd trial_end_from(results::Store& store, const std::string& run_id);

class ProcessTrialSource : public TrialSource {
 public:
  // `metric` is the study's (val_acc or val_loss): the column read from the records files.
  ProcessTrialSource(SweepRecords& records, const RunLayout& layout, std::string sweep_name,
                     ProcessSourceOptions options, RunObserver& observer);
  ~ProcessTrialSource() override;

  size_t slots() const override;
  size_t running() const override;
  void start(const Job& trial, const std::optional<StopRequest>& stop) override;
  void request_stop(const std::string& run_id, const StopRequest& stop) override;
  SourceEvents poll() override;
  bool stopping() const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace batchlab::sweeps::study
