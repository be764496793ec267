// Folding job record files into a sweep database.
//
// One writer per SQLite file (DESIGN.md): every job of a sweep writes its own records file in its
// run directory (`batchlab train --db runs/<sweep>/<run_id>/records.db`), and one process, the
// coordinator, copies those records into the sweep database. An ingest replaces the run's rows in
// one transaction (delete the run's per-step rows, copy all of the job's), so running it twice, or
// after the job wrote more, or after a crash half-way, always leaves exactly the job's rows: no
// duplicate (run_id, step) rows, nothing lost.
//
// The runs row is merged rather than replaced: columns the job knows (status, geometry, clock)
// win, columns only the planner wrote (sweep_id, planned peak_lr when the job never started) stay.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "results/store.h"

namespace batchlab::results {

struct IngestOptions {
  // Stored in runs.sweep_id (the sweeps row must exist); nullopt keeps what the target has.
  std::optional<std::string> sweep_id;
  // The coordinator's own count of launches; nullopt keeps the larger of the two files' counts.
  std::optional<std::int64_t> attempts;
  // false: only the runs row (status, last_step, train_s): a cheap progress update for a running
  // job whose per-step rows are copied when it ends.
  bool series = true;
};

struct IngestedRun {
  std::string run_id;
  std::string status;  // as recorded by the job
  std::optional<std::string> error;
  std::optional<std::int64_t> last_step;
  std::optional<std::int64_t> total_steps;
  std::int64_t rows = 0;  // per-step rows copied (all tables)
};

// The target database's writer for ingests. Opening creates or migrates the target.
class Ingester {
 public:
  explicit Ingester(const std::string& target_db, StoreOptions options = {});
  ~Ingester();
  Ingester(const Ingester&) = delete;
  Ingester& operator=(const Ingester&) = delete;

  // Folds every run recorded in `records_db`, all in one transaction. An empty or brand-new file
  // (a job that died before recording anything) yields no runs. Throws StoreInputError when the
  // file does not exist or is not a database, or has a newer schema; StoreError otherwise.
  std::vector<IngestedRun> ingest(const std::string& records_db, const IngestOptions& options = {});

  // Folds one run; nullopt when `records_db` holds no row for it (nothing is changed then).
  std::optional<IngestedRun> ingest_run(const std::string& records_db, const std::string& run_id,
                                        const IngestOptions& options = {});

  // Records a sweep's plan in one transaction: the sweeps row (created_at kept) and a runs row per
  // job, all with the sweep's sweep_id. A new run is `planned`; an existing one keeps its status,
  // attempts and everything it recorded, and takes the sweep_id and the columns it lacks.
  void register_plan(const SweepRow& sweep, const std::vector<RunRow>& runs);

  const std::string& path() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// For a records file whose job process has ended: when `run_id` is still `running` there (the
// process was killed, or crashed before it could say so), records `status` and `error` in it and
// returns true. Must only be called once the job's process is gone, so the file keeps one writer
// at a time. Throws StoreInputError when the file does not exist.
bool finalize_record(const std::string& records_db, const std::string& run_id,
                     std::string_view status, const std::string& error);

// A consistent, self-contained copy of `source_db` (which may be in WAL mode and still being
// written) at `out_path`, in rollback-journal mode so that a process on another host can read it
// without WAL shared memory. Written to a temporary file beside `out_path` and renamed, so a reader
// sees either the old copy or the new one.
void snapshot_database(const std::string& source_db, const std::string& out_path);

}  // namespace batchlab::results
