// Store: the one writer of a results database. It opens (or creates) the file, migrates it to
// the latest schema, and writes typed rows in batches, one IMMEDIATE transaction per batch.
//
// Rows are keyed so that a resumed job rewrites rather than duplicates: per-step rows replace the
// row with the same (run_id, step[, layer]) key, and delete_rows_after() removes what a run wrote
// past the checkpoint it resumes from. Non-finite values survive the round trip (nonfinite.h).
//
// A Store is one SQLite connection and is used by one thread at a time (BatchedWriter puts it on
// a background thread). DESIGN.md: one writer per file; other processes may read concurrently
// (WAL), e.g. with query_readonly().
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "results/rows.h"

namespace batchlab::results {

struct StoreOptions {
  // How long a statement waits for another connection's lock before failing with
  // "database is locked". Long, because a reader's checkpoint or a coordinator's ingest may hold
  // the lock briefly and a job must not die of that.
  std::chrono::milliseconds busy_timeout{30000};
};

// Rows of every kind, written together in one transaction.
struct RowBatch {
  std::vector<StepRow> steps;
  std::vector<EvalRow> evals;
  std::vector<LayerStatRow> layer_stats;
  std::vector<NoiseRow> noise;
  std::vector<MilestoneRow> milestones;

  std::size_t size() const noexcept;
  bool empty() const noexcept { return size() == 0; }
  void clear() noexcept;
};

class Store {
 public:
  // Opens or creates `path` (creating missing parent folders), switches it to WAL, sets
  // busy_timeout, foreign keys and synchronous=NORMAL, and migrates it. Throws StoreInputError for
  // a file that is not a database or has a newer schema, StoreError otherwise.
  explicit Store(const std::string& path, StoreOptions options = {});
  ~Store();
  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const std::string& path() const noexcept;
  std::int64_t schema_version();

  // ---- sweeps and runs

  // Inserts a sweep or updates its name and spec; created_at stays that of the first insert.
  void upsert_sweep(const SweepRow& sweep);
  std::optional<SweepRow> get_sweep(const std::string& sweep_id);

  // Inserts a run or updates it. Rules, so planning, starting, retrying and resuming compose:
  // - a column given (set optional) replaces the stored value; one not given keeps it, so a job
  //   that does not know its sweep_id does not erase what the planner wrote;
  // - status `running` starts an attempt: attempts += 1 (1 on insert), started_at is set to now
  //   when not given, finished_at and error are cleared (error unless given);
  // - started_at keeps the first attempt's value (time-to-result counts from the first start);
  // - status `planned` on an existing run changes neither status nor attempts: re-planning a sweep
  //   never forgets that a run is done, failed or running;
  // - row.attempts, when given, is stored as is (an ingest replaying records stays idempotent);
  // - a final status (done, failed, diverged, preempted, oom, stopped) sets finished_at to now when
  // not
  //   given.
  // Throws StoreError for an unknown status, or for a sweep_id without a sweeps row (foreign key).
  void upsert_run(const RunRow& run);

  // Records the cluster job of the run's latest submission (runs.scheduler_job) and, when given,
  // the number of that submission (runs.attempts: written when the job is submitted, so that a
  // bound on a run's submissions holds even for jobs that never record anything). Throws if the
  // run is missing.
  void set_scheduler_job(const std::string& run_id, const std::string& job,
                         std::optional<std::int64_t> attempts = std::nullopt);

  // Sets status, error (nullopt clears it), finished_at (now when nullopt and the status is
  // final; cleared for planned/running) and stop_reason (a stopped run's request reason; nullopt
  // clears it). Does not count an attempt. Throws if the run is missing.
  void set_run_status(const std::string& run_id, std::string_view status,
                      const std::optional<std::string>& error = std::nullopt,
                      const std::optional<std::string>& finished_at = std::nullopt,
                      const std::optional<std::string>& stop_reason = std::nullopt);

  // Records progress (e.g. at a checkpoint); a nullopt argument leaves that column unchanged.
  void set_run_progress(const std::string& run_id, std::optional<std::int64_t> last_step,
                        std::optional<double> train_s);

  bool run_exists(const std::string& run_id);
  std::optional<RunRow> get_run(const std::string& run_id);
  // All runs, or those of one sweep, ordered by run_id.
  std::vector<RunRow> list_runs(const std::optional<std::string>& sweep_id = std::nullopt);

  // ---- per-step rows: one BEGIN IMMEDIATE transaction per call, INSERT OR REPLACE by key.
  // Each run_id must have a runs row first (foreign key). write_steps also raises runs.last_step
  // to the largest step written. Milestones keep the earliest step at which a target was reached.

  void write_steps(const std::vector<StepRow>& rows);
  void write_evals(const std::vector<EvalRow>& rows);
  void write_layer_stats(const std::vector<LayerStatRow>& rows);
  void write_noise(const std::vector<NoiseRow>& rows);
  void write_milestones(const std::vector<MilestoneRow>& rows);
  void write_batch(const RowBatch& batch);

  // For resume: removes every steps/evals/layer_stats/noise_scale/milestones row of the run with
  // step > `step`, and lowers runs.last_step to `step`, in one transaction. step = -1 clears the
  // run's series (a retry from scratch).
  void delete_rows_after(const std::string& run_id, std::int64_t step);
  // How many updates of the run the steps table holds, in the unit of a checkpoint's step (the
  // updates done): max(step) + 1, as steps rows are numbered from 0 by the update they record; 0
  // when it has none.
  std::int64_t updates_recorded(const std::string& run_id);

  // ---- scaling studies: one upsert transaction per call, keyed by cell_id / run_id, so the
  // coordinator rewrites a cell or trial as it progresses. updated_at / decided_at are set to now
  // when absent. Throws StoreError for an unknown status or outcome, or a trial without its cell.

  void write_study_cells(const std::vector<StudyCellRow>& cells);
  void write_study_trials(const std::vector<StudyTrialRow>& trials);
  // All cells, or those of one sweep, ordered by optimizer, batch, seed.
  std::vector<StudyCellRow> read_study_cells(
      const std::optional<std::string>& sweep_id = std::nullopt);
  // All trials, or those of one sweep's cells, ordered by cell and lr_index.
  std::vector<StudyTrialRow> read_study_trials(
      const std::optional<std::string>& sweep_id = std::nullopt);

  // ---- fixed-budget searches, likewise: upserts keyed by cell_id / run_id (throws StoreError for
  // an unknown status or outcome, or a trial without its cell).
  void write_budget_cells(const std::vector<BudgetCellRow>& cells);
  void write_budget_trials(const std::vector<BudgetTrialRow>& trials);
  // All cells, or those of one sweep, ordered by optimizer, series, batch, seed.
  std::vector<BudgetCellRow> read_budget_cells(
      const std::optional<std::string>& sweep_id = std::nullopt);
  // All trials, or those of one sweep's cells, ordered by cell and point.
  std::vector<BudgetTrialRow> read_budget_trials(
      const std::optional<std::string>& sweep_id = std::nullopt);

  // ---- readers (a run's rows in step order, non-finite values restored)

  std::vector<StepRow> read_steps(const std::string& run_id);
  std::vector<EvalRow> read_evals(const std::string& run_id);
  std::vector<LayerStatRow> read_layer_stats(const std::string& run_id);
  std::vector<NoiseRow> read_noise(const std::string& run_id);
  std::vector<MilestoneRow> read_milestones(const std::string& run_id);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace batchlab::results
