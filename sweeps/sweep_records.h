// The sweep database as the coordinator keeps it: the plan registered as `planned` runs, and each
// job's own records file folded in (results/ingest.h). Only a holder of the sweep's coordinator
// lock (run_layout.h) may use this class to write; everyone else reads.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>

#include "results/ingest.h"
#include "results/store.h"
#include "sweeps/expand.h"
#include "sweeps/run_layout.h"
#include "sweeps/spec.h"

namespace batchlab::sweeps {

// Statuses that end a job for good: re-running the spec skips them (done, diverged, and stopped:
// a study's stop request was honoured, a result).
bool is_settled(const std::string& status);

class SweepRecords {
 public:
  SweepRecords(const SweepSpec& spec, const RunLayout& layout);

  const std::string& sweep_id() const { return sweep_id_; }
  results::Store& store() { return store_; }

  // The sweeps row and a planned runs row per job (existing runs keep their status).
  void register_plan(const SweepSpec& spec, const Plan& plan);
  // More planned runs rows (a study's trials, as they are decided); register_plan first.
  void register_jobs(const std::vector<Job>& jobs);

  // Folds the records file of every job not yet settled in the sweep database. A job whose file
  // still says `running` although no process holds its job lock was interrupted (its coordinator
  // was killed): it is recorded as `preempted`, to be resumed. Jobs in `external` (submitted to
  // Slurm and still queued or running there) are folded as they are. Returns the run ids whose
  // job lock is held by a live process.
  std::set<std::string> reconcile(const Plan& plan, const std::set<std::string>& external = {});

  // Folds one job's records file (if any) with the coordinator's attempt count.
  std::optional<results::IngestedRun> ingest(const std::string& run_id,
                                             std::optional<int64_t> attempts, bool series = true);

  // This sweep's runs rows by run id.
  std::map<std::string, results::RunRow> runs();

 private:
  std::string sweep_id_;
  results::SweepRow sweep_row_;
  RunLayout layout_;
  results::Store store_;
  results::Ingester ingester_;
};

}  // namespace batchlab::sweeps
