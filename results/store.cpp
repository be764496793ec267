#include "results/store.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <filesystem>
#include <map>
#include <type_traits>
#include <unordered_map>

#include "results/errors.h"
#include "results/row_codec.h"
#include "results/schema.h"
#include "results/sqlite_util.h"

namespace batchlab::results {

namespace {

template <class Row>
std::string insert_sql() {
  const auto& cols = RowCodec<Row>::columns();
  return fmt::format("INSERT OR REPLACE INTO {}({}) VALUES({})", RowCodec<Row>::table,
                     join_columns(cols), placeholders(cols.size()));
}

// A resumed job that re-reports a milestone reached before its checkpoint must not move it later:
// the earliest step wins.
template <>
std::string insert_sql<MilestoneRow>() {
  const auto& cols = RowCodec<MilestoneRow>::columns();
  return fmt::format(
      "INSERT INTO milestones({}) VALUES({}) ON CONFLICT(run_id, metric, target) DO UPDATE SET "
      "step = excluded.step, epoch = excluded.epoch, samples = excluded.samples, "
      "wall_s = excluded.wall_s WHERE excluded.step <= milestones.step",
      join_columns(cols), placeholders(cols.size()));
}

// Study rows are updated as a study progresses; an upsert rather than INSERT OR REPLACE, whose
// delete-then-insert of a cell would trip study_trials' foreign key.
template <class Row>
std::string upsert_sql(const std::string& key) {
  const auto& cols = RowCodec<Row>::columns();
  std::string sets;
  for (const auto& c : cols) {
    if (c == key) continue;
    if (!sets.empty()) sets += ", ";
    sets += fmt::format("{0} = excluded.{0}", c);
  }
  return fmt::format("INSERT INTO {}({}) VALUES({}) ON CONFLICT({}) DO UPDATE SET {}",
                     RowCodec<Row>::table, join_columns(cols), placeholders(cols.size()), key,
                     sets);
}

// Columns of a study table qualified with its alias, for a join.
template <class Row>
std::string qualified_columns(const std::string& alias) {
  std::string out;
  for (const auto& c : RowCodec<Row>::columns()) out += (out.empty() ? "" : ", ") + alias + "." + c;
  return out;
}

template <class Row>
std::string select_sql() {
  return fmt::format("SELECT {} FROM {} WHERE run_id = ?1 ORDER BY {}",
                     join_columns(RowCodec<Row>::columns()), RowCodec<Row>::table,
                     RowCodec<Row>::order_by);
}

std::string describe_key(const StepRow& r) {
  return fmt::format("run {} step {}", r.run_id, r.step);
}
std::string describe_key(const EvalRow& r) {
  return fmt::format("run {} step {}", r.run_id, r.step);
}
std::string describe_key(const NoiseRow& r) {
  return fmt::format("run {} step {}", r.run_id, r.step);
}
std::string describe_key(const LayerStatRow& r) {
  return fmt::format("run {} step {} layer {}", r.run_id, r.step, r.layer);
}
std::string describe_key(const MilestoneRow& r) {
  return fmt::format("run {} {} >= {}", r.run_id, r.metric, r.target);
}

// The runs upsert; see Store::upsert_run for the rules these expressions implement.
std::string upsert_run_sql() {
  const auto& cols = RowCodec<RunRow>::columns();
  std::string sets;
  for (const auto& c : cols) {
    if (c == "run_id") continue;
    std::string expr;
    if (c == "status") {
      expr = "CASE WHEN excluded.status = 'planned' THEN runs.status ELSE excluded.status END";
    } else if (c == "attempts") {
      // ?N+1 is the attempts the caller gave (NULL: count).
      expr = fmt::format("COALESCE(?{}, runs.attempts + (excluded.status = 'running'))",
                         cols.size() + 1);
    } else if (c == "error" || c == "stop_reason") {
      // A new attempt starts clean; a later write without them keeps them.
      expr = fmt::format(
          "CASE WHEN excluded.status = 'running' THEN excluded.{0} "
          "ELSE COALESCE(excluded.{0}, runs.{0}) END",
          c);
    } else if (c == "started_at") {
      expr = "COALESCE(runs.started_at, excluded.started_at)";
    } else if (c == "finished_at") {
      expr =
          "CASE WHEN excluded.status = 'running' THEN NULL "
          "ELSE COALESCE(excluded.finished_at, runs.finished_at) END";
    } else {
      expr = fmt::format("COALESCE(excluded.{0}, runs.{0})", c);
    }
    if (!sets.empty()) sets += ", ";
    sets += fmt::format("{} = {}", c, expr);
  }
  return fmt::format("INSERT INTO runs({}) VALUES({}) ON CONFLICT(run_id) DO UPDATE SET {}",
                     join_columns(cols), placeholders(cols.size()), sets);
}

const char* const kPerStepTables[] = {"steps", "evals", "layer_stats", "noise_scale", "milestones"};

}  // namespace

std::size_t RowBatch::size() const noexcept {
  return steps.size() + evals.size() + layer_stats.size() + noise.size() + milestones.size();
}

void RowBatch::clear() noexcept {
  steps.clear();
  evals.clear();
  layer_stats.clear();
  noise.clear();
  milestones.clear();
}

struct Store::Impl {
  Connection db;
  std::unordered_map<std::string, std::unique_ptr<Statement>> statements;

  Impl(const std::string& path, int flags) : db(path, flags) {}

  // Statements are prepared once per Store and reused: a training run writes the same few shapes
  // of row hundreds of thousands of times.
  Statement& prepared(const std::string& sql) {
    auto& slot = statements[sql];
    if (!slot) slot = std::make_unique<Statement>(db, sql);
    slot->reset();
    return *slot;
  }

  void check_status(std::string_view status) const {
    if (!is_known_run_status(status)) {
      throw StoreError(
          db.path(), fmt::format("unknown run status `{}` (known: planned, running, done, failed, "
                                 "diverged, preempted, oom, stopped)",
                                 status));
    }
  }

  template <class Row>
  void upsert_all(const std::vector<Row>& rows, const std::string& key) {
    if (rows.empty()) return;
    Transaction tx(db);
    Statement& stmt = prepared(upsert_sql<Row>(key));
    ResetOnExit reset(stmt);
    for (const Row& row : rows) {
      stmt.reset();
      RowCodec<Row>::bind(stmt, row);
      stmt.run();
    }
    tx.commit();
  }

  template <class Row>
  std::vector<Row> select_all(const std::string& sql, const std::optional<std::string>& arg) {
    Statement& stmt = prepared(sql);
    ResetOnExit reset(stmt);
    if (arg) stmt.bind_text(1, *arg);
    std::vector<Row> rows;
    while (stmt.step()) rows.push_back(RowCodec<Row>::read(stmt, db.path()));
    return rows;
  }

  template <class Row>
  void insert_rows(const std::vector<Row>& rows) {
    if (rows.empty()) return;
    Statement& stmt = prepared(insert_sql<Row>());
    ResetOnExit reset(stmt);
    for (const Row& row : rows) {
      stmt.reset();
      try {
        RowCodec<Row>::bind(stmt, row);
        stmt.run();
      } catch (const StoreError& e) {
        throw StoreError(
            db.path(),
            fmt::format("cannot write {} row ({})", RowCodec<Row>::table, describe_key(row)),
            e.sqlite_message());
      }
    }
  }

  void raise_last_step(const std::vector<StepRow>& rows) {
    if (rows.empty()) return;
    std::map<std::string, std::int64_t> last;
    for (const auto& r : rows) {
      auto [it, inserted] = last.emplace(r.run_id, r.step);
      if (!inserted && r.step > it->second) it->second = r.step;
    }
    Statement& stmt =
        prepared("UPDATE runs SET last_step = max(COALESCE(last_step, ?2), ?2) WHERE run_id = ?1");
    for (const auto& [run_id, step] : last) {
      stmt.reset();
      stmt.bind_text(1, run_id);
      stmt.bind_int64(2, step);
      stmt.run();
    }
  }

  // One kind of row in its own transaction.
  template <class Row>
  void write(const std::vector<Row>& rows) {
    if (rows.empty()) return;
    Transaction tx(db);
    insert_rows(rows);
    if constexpr (std::is_same_v<Row, StepRow>) raise_last_step(rows);
    tx.commit();
  }

  template <class Row>
  std::vector<Row> read_rows(const std::string& run_id) {
    Statement& stmt = prepared(select_sql<Row>());
    ResetOnExit reset(stmt);
    stmt.bind_text(1, run_id);
    std::vector<Row> rows;
    while (stmt.step()) rows.push_back(RowCodec<Row>::read(stmt, db.path()));
    return rows;
  }
};

Store::Store(const std::string& path, StoreOptions options) {
  const bool in_memory = path == ":memory:" || path.empty();
  if (!in_memory && path.rfind("file:", 0) != 0) {
    const auto parent = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (ec) throw StoreError(path, "cannot create folder " + parent.string(), ec.message());
  }
  impl_ = std::make_unique<Impl>(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  Connection& db = impl_->db;
  sqlite3_busy_timeout(db.get(), static_cast<int>(options.busy_timeout.count()));
  try {
    const std::string mode = db.pragma_set("journal_mode", "WAL");
    if (mode != "wal" && !(in_memory && mode == "memory")) {
      throw StoreError(path, fmt::format("cannot switch to WAL journal mode (SQLite kept `{}`); "
                                         "is the file on a filesystem without shared memory?",
                                         mode));
    }
    db.exec("PRAGMA synchronous = NORMAL", "cannot set synchronous mode");
    db.exec("PRAGMA foreign_keys = ON", "cannot enable foreign keys");
    migrate(db);
  } catch (const StoreInputError&) {
    throw;
  } catch (const StoreError& e) {
    if (db.last_error_code() == SQLITE_NOTADB) {
      throw StoreInputError(path, "not a SQLite database", e.sqlite_message());
    }
    throw;
  }
}

Store::~Store() = default;
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;

const std::string& Store::path() const noexcept { return impl_->db.path(); }

std::int64_t Store::schema_version() { return results::schema_version(impl_->db); }

void Store::upsert_sweep(const SweepRow& sweep) {
  SweepRow row = sweep;
  if (!row.created_at) row.created_at = utc_now();
  const auto& cols = RowCodec<SweepRow>::columns();
  Statement& stmt = impl_->prepared(fmt::format(
      "INSERT INTO sweeps({}) VALUES({}) ON CONFLICT(sweep_id) DO UPDATE SET name = excluded.name, "
      "spec_toml = COALESCE(excluded.spec_toml, sweeps.spec_toml), "
      "created_at = COALESCE(sweeps.created_at, excluded.created_at)",
      join_columns(cols), placeholders(cols.size())));
  RowCodec<SweepRow>::bind(stmt, row);
  stmt.run();
}

std::optional<SweepRow> Store::get_sweep(const std::string& sweep_id) {
  Statement& stmt = impl_->prepared(fmt::format("SELECT {} FROM sweeps WHERE sweep_id = ?1",
                                                join_columns(RowCodec<SweepRow>::columns())));
  ResetOnExit reset(stmt);
  stmt.bind_text(1, sweep_id);
  if (!stmt.step()) return std::nullopt;
  return RowCodec<SweepRow>::read(stmt, path());
}

void Store::upsert_run(const RunRow& run) {
  impl_->check_status(run.status);
  RunRow row = run;
  const bool starting = row.status == run_status::kRunning;
  // What an insert stores; on conflict the SQL applies the rules of the header instead.
  row.attempts = run.attempts.value_or(starting ? 1 : 0);
  if (starting) {
    if (!row.started_at) row.started_at = utc_now();
    row.finished_at.reset();
  } else if (is_final_run_status(row.status) && !row.finished_at) {
    row.finished_at = utc_now();
  }
  Statement& stmt = impl_->prepared(upsert_run_sql());
  RowCodec<RunRow>::bind(stmt, row);
  stmt.bind_int64(static_cast<int>(RowCodec<RunRow>::columns().size()) + 1, run.attempts);
  try {
    stmt.run();
  } catch (const StoreError& e) {
    throw StoreError(path(), fmt::format("cannot write run {}", run.run_id), e.sqlite_message());
  }
}

void Store::set_scheduler_job(const std::string& run_id, const std::string& job,
                              std::optional<std::int64_t> attempts) {
  Statement& stmt = impl_->prepared(
      "UPDATE runs SET scheduler_job = ?2, attempts = COALESCE(?3, attempts) WHERE run_id = ?1");
  stmt.bind_text(1, run_id);
  stmt.bind_text(2, job);
  if (attempts) {
    stmt.bind_int64(3, *attempts);
  } else {
    stmt.bind_null(3);
  }
  stmt.run();
  if (impl_->db.changes() == 0) {
    throw StoreError(path(), fmt::format("cannot record the job of run {}: no such run", run_id));
  }
}

void Store::set_run_status(const std::string& run_id, std::string_view status,
                           const std::optional<std::string>& error,
                           const std::optional<std::string>& finished_at,
                           const std::optional<std::string>& stop_reason) {
  impl_->check_status(status);
  std::optional<std::string> finished = finished_at;
  if (!is_final_run_status(status)) {
    finished.reset();
  } else if (!finished) {
    finished = utc_now();
  }
  Statement& stmt = impl_->prepared(
      "UPDATE runs SET status = ?2, error = ?3, finished_at = ?4, stop_reason = ?5 WHERE run_id = "
      "?1");
  stmt.bind_text(1, run_id);
  stmt.bind_text(2, status);
  stmt.bind_text(3, error);
  stmt.bind_text(4, finished);
  stmt.bind_text(5, stop_reason);
  stmt.run();
  if (impl_->db.changes() == 0) {
    throw StoreError(path(), fmt::format("cannot set status of run {}: no such run", run_id));
  }
}

void Store::set_run_progress(const std::string& run_id, std::optional<std::int64_t> last_step,
                             std::optional<double> train_s) {
  Statement& stmt = impl_->prepared(
      "UPDATE runs SET last_step = COALESCE(?2, last_step), train_s = COALESCE(?3, train_s) "
      "WHERE run_id = ?1");
  stmt.bind_text(1, run_id);
  stmt.bind_int64(2, last_step);
  stmt.bind_double(3, train_s);
  stmt.run();
  if (impl_->db.changes() == 0) {
    throw StoreError(path(), fmt::format("cannot record progress of run {}: no such run", run_id));
  }
}

bool Store::run_exists(const std::string& run_id) {
  Statement& stmt = impl_->prepared("SELECT 1 FROM runs WHERE run_id = ?1");
  ResetOnExit reset(stmt);
  stmt.bind_text(1, run_id);
  return stmt.step();
}

std::optional<RunRow> Store::get_run(const std::string& run_id) {
  Statement& stmt = impl_->prepared(fmt::format("SELECT {} FROM runs WHERE run_id = ?1",
                                                join_columns(RowCodec<RunRow>::columns())));
  ResetOnExit reset(stmt);
  stmt.bind_text(1, run_id);
  if (!stmt.step()) return std::nullopt;
  return RowCodec<RunRow>::read(stmt, path());
}

std::vector<RunRow> Store::list_runs(const std::optional<std::string>& sweep_id) {
  const std::string cols = join_columns(RowCodec<RunRow>::columns());
  Statement& stmt = impl_->prepared(
      sweep_id ? fmt::format("SELECT {} FROM runs WHERE sweep_id = ?1 ORDER BY run_id", cols)
               : fmt::format("SELECT {} FROM runs ORDER BY run_id", cols));
  ResetOnExit reset(stmt);
  if (sweep_id) stmt.bind_text(1, *sweep_id);
  std::vector<RunRow> runs;
  while (stmt.step()) runs.push_back(RowCodec<RunRow>::read(stmt, path()));
  return runs;
}

void Store::write_steps(const std::vector<StepRow>& rows) { impl_->write(rows); }
void Store::write_evals(const std::vector<EvalRow>& rows) { impl_->write(rows); }
void Store::write_layer_stats(const std::vector<LayerStatRow>& rows) { impl_->write(rows); }
void Store::write_noise(const std::vector<NoiseRow>& rows) { impl_->write(rows); }
void Store::write_milestones(const std::vector<MilestoneRow>& rows) { impl_->write(rows); }

void Store::write_batch(const RowBatch& batch) {
  if (batch.empty()) return;
  Transaction tx(impl_->db);
  impl_->insert_rows(batch.steps);
  impl_->insert_rows(batch.evals);
  impl_->insert_rows(batch.layer_stats);
  impl_->insert_rows(batch.noise);
  impl_->insert_rows(batch.milestones);
  impl_->raise_last_step(batch.steps);
  tx.commit();
}

std::int64_t Store::updates_recorded(const std::string& run_id) {
  Statement& stmt =
      impl_->prepared("SELECT COALESCE(max(step) + 1, 0) FROM steps WHERE run_id = ?1");
  stmt.bind_text(1, run_id);
  const std::int64_t step = stmt.step() ? stmt.column_int64(0) : 0;
  stmt.reset();
  return step;
}

void Store::delete_rows_after(const std::string& run_id, std::int64_t step) {
  Transaction tx(impl_->db);
  for (const char* table : kPerStepTables) {
    Statement& stmt =
        impl_->prepared(fmt::format("DELETE FROM {} WHERE run_id = ?1 AND step > ?2", table));
    stmt.bind_text(1, run_id);
    stmt.bind_int64(2, step);
    stmt.run();
  }
  Statement& stmt = impl_->prepared(
      "UPDATE runs SET last_step = CASE WHEN ?2 < 0 THEN NULL ELSE min(last_step, ?2) END "
      "WHERE run_id = ?1 AND last_step IS NOT NULL");
  stmt.bind_text(1, run_id);
  stmt.bind_int64(2, step);
  stmt.run();
  tx.commit();
}

void Store::write_study_cells(const std::vector<StudyCellRow>& cells) {
  std::vector<StudyCellRow> rows = cells;
  for (auto& row : rows) {
    if (!is_known_cell_status(row.status)) {
      throw StoreError(path(), fmt::format("cell {}: unknown study cell status `{}` (known: "
                                           "searching, reached, censored)",
                                           row.cell_id, row.status));
    }
    if (!row.updated_at) row.updated_at = utc_now();
  }
  try {
    impl_->upsert_all(rows, "cell_id");
  } catch (const StoreError& e) {
    throw StoreError(path(), "cannot write study cells", e.sqlite_message());
  }
}

void Store::write_study_trials(const std::vector<StudyTrialRow>& trials) {
  std::vector<StudyTrialRow> rows = trials;
  for (auto& row : rows) {
    if (!is_known_trial_outcome(row.outcome)) {
      throw StoreError(path(), fmt::format("trial {}: unknown study trial outcome `{}` (known: "
                                           "running, reached, capped, pruned, diverged, "
                                           "stopped_by_race)",
                                           row.run_id, row.outcome));
    }
    if (!row.decided_at) row.decided_at = utc_now();
  }
  try {
    impl_->upsert_all(rows, "run_id");
  } catch (const StoreError& e) {
    // The usual cause: a trial whose cell was not written first (foreign key).
    throw StoreError(path(), "cannot write study trials", e.sqlite_message());
  }
}

std::vector<StudyCellRow> Store::read_study_cells(const std::optional<std::string>& sweep_id) {
  using Codec = RowCodec<StudyCellRow>;
  const std::string cols = join_columns(Codec::columns());
  return impl_->select_all<StudyCellRow>(
      sweep_id ? fmt::format("SELECT {} FROM study_cells WHERE sweep_id = ?1 ORDER BY {}", cols,
                             Codec::order_by)
               : fmt::format("SELECT {} FROM study_cells ORDER BY {}", cols, Codec::order_by),
      sweep_id);
}

std::vector<StudyTrialRow> Store::read_study_trials(const std::optional<std::string>& sweep_id) {
  const std::string cols = qualified_columns<StudyTrialRow>("t");
  const std::string from = "study_trials t JOIN study_cells c ON c.cell_id = t.cell_id";
  return impl_->select_all<StudyTrialRow>(
      sweep_id ? fmt::format("SELECT {} FROM {} WHERE c.sweep_id = ?1 ORDER BY t.cell_id, "
                             "t.lr_index",
                             cols, from)
               : fmt::format("SELECT {} FROM {} ORDER BY t.cell_id, t.lr_index", cols, from),
      sweep_id);
}

void Store::write_budget_cells(const std::vector<BudgetCellRow>& cells) {
  std::vector<BudgetCellRow> rows = cells;
  for (auto& row : rows) {
    if (!is_known_budget_status(row.status)) {
      throw StoreError(path(), fmt::format("budget cell {}: unknown status `{}` (known: searching, "
                                           "done, failed)",
                                           row.cell_id, row.status));
    }
    if (!row.updated_at) row.updated_at = utc_now();
  }
  try {
    impl_->upsert_all(rows, "cell_id");
  } catch (const StoreError& e) {
    throw StoreError(path(), "cannot write budget cells", e.sqlite_message());
  }
}

void Store::write_budget_trials(const std::vector<BudgetTrialRow>& trials) {
  std::vector<BudgetTrialRow> rows = trials;
  for (auto& row : rows) {
    if (!is_known_budget_outcome(row.outcome)) {
      throw StoreError(path(), fmt::format("budget trial {}: unknown outcome `{}` (known: running, "
                                           "halted, finished, diverged)",
                                           row.run_id, row.outcome));
    }
    if (!row.decided_at) row.decided_at = utc_now();
  }
  try {
    impl_->upsert_all(rows, "run_id");
  } catch (const StoreError& e) {
    throw StoreError(path(), "cannot write budget trials", e.sqlite_message());
  }
}

std::vector<BudgetCellRow> Store::read_budget_cells(const std::optional<std::string>& sweep_id) {
  using Codec = RowCodec<BudgetCellRow>;
  const std::string cols = join_columns(Codec::columns());
  return impl_->select_all<BudgetCellRow>(
      sweep_id ? fmt::format("SELECT {} FROM budget_cells WHERE sweep_id = ?1 ORDER BY {}", cols,
                             Codec::order_by)
               : fmt::format("SELECT {} FROM budget_cells ORDER BY {}", cols, Codec::order_by),
      sweep_id);
}

std::vector<BudgetTrialRow> Store::read_budget_trials(const std::optional<std::string>& sweep_id) {
  const std::string cols = qualified_columns<BudgetTrialRow>("t");
  const std::string from = "budget_trials t JOIN budget_cells c ON c.cell_id = t.cell_id";
  return impl_->select_all<BudgetTrialRow>(
      sweep_id ? fmt::format("SELECT {} FROM {} WHERE c.sweep_id = ?1 ORDER BY t.cell_id, "
                             "t.point_index",
                             cols, from)
               : fmt::format("SELECT {} FROM {} ORDER BY t.cell_id, t.point_index", cols, from),
      sweep_id);
}

std::vector<StepRow> Store::read_steps(const std::string& run_id) {
  return impl_->read_rows<StepRow>(run_id);
}

std::vector<EvalRow> Store::read_evals(const std::string& run_id) {
  return impl_->read_rows<EvalRow>(run_id);
}

std::vector<LayerStatRow> Store::read_layer_stats(const std::string& run_id) {
  return impl_->read_rows<LayerStatRow>(run_id);
}

std::vector<NoiseRow> Store::read_noise(const std::string& run_id) {
  return impl_->read_rows<NoiseRow>(run_id);
}

std::vector<MilestoneRow> Store::read_milestones(const std::string& run_id) {
  return impl_->read_rows<MilestoneRow>(run_id);
}

}  // namespace batchlab::results
