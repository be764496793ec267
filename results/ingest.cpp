#include "results/ingest.h"

#include <fmt/format.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "results/errors.h"
#include "results/row_codec.h"
#include "results/rows.h"
#include "results/schema.h"
#include "results/sqlite_util.h"

namespace batchlab::results {

namespace {

const char* const kSeriesTables[] = {"steps", "evals", "layer_stats", "noise_scale", "milestones"};

// Columns the job's current attempt owns outright: a from-scratch retry clears them, and the
// sweep database must then say so too rather than keep the previous attempt's values.
const std::set<std::string> kJobStateColumns = {"status",    "error",   "finished_at",
                                                "last_step", "train_s", "stop_reason"};

std::vector<std::string> table_columns(Connection& db, const std::string& schema,
                                       const std::string& table) {
  Statement stmt(db, fmt::format("PRAGMA {}.table_info({})", schema, table));
  std::vector<std::string> columns;
  while (stmt.step()) columns.push_back(stmt.column_text(1));
  return columns;
}

// The target's columns that the job's file also has, in the target's order: a records file
// written by an older batchlab (fewer columns) still folds in.
std::vector<std::string> shared_columns(Connection& db, const std::string& table) {
  const auto target = table_columns(db, "main", table);
  const auto job = table_columns(db, "job", table);
  std::vector<std::string> out;
  for (const auto& c : target) {
    if (std::find(job.begin(), job.end(), c) != job.end()) out.push_back(c);
  }
  return out;
}

// The job's own account of the run (status, error, last step, total steps). A column its file
// does not have (an older batchlab's, or a schema that does not match its version: found by
// fuzz_ingest, "no such column: error", exit 1) reads as NULL instead of failing the fold.
std::string job_run_select(Connection& db) {
  const auto job = table_columns(db, "job", "runs");
  std::string select;
  for (const char* column : {"status", "error", "last_step", "total_steps"}) {
    const bool has = std::find(job.begin(), job.end(), column) != job.end();
    select += (select.empty() ? "" : ", ") + (has ? std::string(column) : std::string("NULL"));
  }
  return "SELECT " + select + " FROM job.runs WHERE run_id = ?1";
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// `job_has` names the coordinator's columns (sweep_id, attempts) the job's file has too; ?2 and
// ?3 are bound whether it has them or not, so the statement names them either way (a file
// without them, an older batchlab's or a damaged one, ended the fold with "column index out of
// range", exit 1: found by fuzz_ingest).
std::string upsert_runs_sql(const std::vector<std::string>& cols,
                            const std::set<std::string>& job_has) {
  std::vector<std::string> select;
  std::vector<std::string> sets;
  for (const auto& c : cols) {
    if (c == "sweep_id") {
      select.push_back(job_has.count(c) ? "COALESCE(?2, sweep_id)" : "?2");
    } else if (c == "attempts") {
      select.push_back(job_has.count(c) ? "COALESCE(?3, attempts)" : "COALESCE(?3, 0)");
    } else {
      select.push_back(c);
    }
    if (c == "run_id") continue;
    std::string expr;
    if (c == "sweep_id") {
      expr = "COALESCE(?2, runs.sweep_id, excluded.sweep_id)";
    } else if (c == "attempts") {
      expr = "COALESCE(?3, max(runs.attempts, excluded.attempts))";
    } else if (c == "started_at") {
      expr =
          "COALESCE(runs.started_at, excluded.started_at)";  // time-to-result from the first start
    } else if (kJobStateColumns.count(c) > 0) {
      expr = "excluded." + c;
    } else {
      expr = fmt::format("COALESCE(excluded.{0}, runs.{0})", c);
    }
    sets.push_back(c + " = " + expr);
  }
  // The WHERE clause is required: without it SQLite would read ON CONFLICT as a join constraint.
  return fmt::format(
      "INSERT INTO main.runs({}) SELECT {} FROM job.runs WHERE run_id = ?1 "
      "ON CONFLICT(run_id) DO UPDATE SET {}",
      join(cols), join(select), join(sets));
}

// ATTACH cannot run inside a transaction and must be undone however the ingest ends.
class Attached {
 public:
  Attached(Connection& db, const std::string& path) : db_(db) {
    Statement stmt(db, "ATTACH DATABASE ?1 AS job");
    stmt.bind_text(1, path);
    stmt.run();
  }
  ~Attached() {
    try {
      db_.exec("DETACH DATABASE job", "cannot detach a records file");
    } catch (const StoreError&) {
      // Nothing useful to do in a destructor; the next ATTACH would report the problem.
    }
  }
  Attached(const Attached&) = delete;
  Attached& operator=(const Attached&) = delete;

 private:
  Connection& db_;
};

// A DEFERRED transaction: BEGIN IMMEDIATE would take a write lock on every attached file too,
// i.e. on the records file of a job that may still be writing it. The first statement inside is a
// write to main, which takes main's write lock before anything is read from it.
class DeferredTransaction {
 public:
  explicit DeferredTransaction(Connection& db) : db_(db) { db_.exec("BEGIN", "cannot begin"); }
  ~DeferredTransaction() {
    if (open_) sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
  }
  DeferredTransaction(const DeferredTransaction&) = delete;
  DeferredTransaction& operator=(const DeferredTransaction&) = delete;
  void commit() {
    db_.exec("COMMIT", "cannot commit the ingest");
    open_ = false;
  }

 private:
  Connection& db_;
  bool open_ = true;
};

void require_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw StoreInputError(path, what + " does not exist");
  }
}

// Columns that only a job's attempts write; planning never touches them on an existing run.
const std::set<std::string> kAttemptColumns = {
    "status",  "attempts", "error",  "started_at",  "finished_at", "last_step",
    "train_s", "host",     "device", "stop_reason", "started_over"};

std::string register_run_sql() {
  const auto& cols = RowCodec<RunRow>::columns();
  std::vector<std::string> sets;
  for (const auto& c : cols) {
    if (c == "run_id" || kAttemptColumns.count(c) > 0) continue;
    sets.push_back(c == "sweep_id" ? "sweep_id = excluded.sweep_id"
                                   : fmt::format("{0} = COALESCE(runs.{0}, excluded.{0})", c));
  }
  return fmt::format("INSERT INTO runs({}) VALUES({}) ON CONFLICT(run_id) DO UPDATE SET {}",
                     join_columns(cols), placeholders(cols.size()), join(sets));
}

}  // namespace

struct Ingester::Impl {
  Connection db;
  explicit Impl(const std::string& path) : db(path, SQLITE_OPEN_READWRITE) {}

  // Whether the attached file holds a runs table; an empty file (a job killed before its first
  // write) does not, and a newer schema is refused rather than half-read.
  bool job_has_runs(const std::string& records_db) {
    const std::int64_t version = db.pragma_int("job.user_version");
    if (version > latest_schema_version()) {
      throw StoreInputError(records_db,
                            fmt::format("records file has schema version {}, newer than this "
                                        "batchlab understands ({})",
                                        version, latest_schema_version()));
    }
    Statement stmt(db, "SELECT 1 FROM job.sqlite_master WHERE type = 'table' AND name = 'runs'");
    if (!stmt.step()) return false;
    // Every table the fold reads by run id must have one: a file that claims a schema version but
    // lacks it is damaged (a plain SQLITE_ERROR, "no such column", would be exit 1). A series
    // table the file does not have at all (an older batchlab's) is skipped by the fold.
    std::vector<std::string> tables = {"runs"};
    tables.insert(tables.end(), std::begin(kSeriesTables), std::end(kSeriesTables));
    for (const auto& table : tables) {
      const auto columns = table_columns(db, "job", table);
      if (!columns.empty() &&
          std::find(columns.begin(), columns.end(), "run_id") == columns.end()) {
        throw StoreInputError(records_db, fmt::format("its {} table has no run_id column: the "
                                                      "file is damaged; running its job again "
                                                      "rebuilds it",
                                                      table));
      }
    }
    return true;
  }

  std::optional<IngestedRun> fold(const std::string& run_id, const IngestOptions& options) {
    // The columns both files have, and the coordinator's two, which the target always has.
    auto run_columns = shared_columns(db, "runs");
    std::set<std::string> job_has;
    for (const char* c : {"sweep_id", "attempts"}) {
      if (std::find(run_columns.begin(), run_columns.end(), c) != run_columns.end()) {
        job_has.insert(c);
      } else {
        run_columns.push_back(c);
      }
    }
    Statement upsert(db, upsert_runs_sql(run_columns, job_has));
    upsert.bind_text(1, run_id);
    upsert.bind_text(2, options.sweep_id);
    upsert.bind_int64(3, options.attempts);
    upsert.run();
    if (db.changes() == 0) return std::nullopt;

    IngestedRun out;
    out.run_id = run_id;
    {
      Statement read(db, job_run_select(db));
      read.bind_text(1, run_id);
      if (read.step()) {
        out.status = read.column_text(0);
        out.error = read.column_opt_text(1);
        out.last_step = read.column_opt_int64(2);
        out.total_steps = read.column_opt_int64(3);
      }
    }
    if (!options.series) return out;
    for (const char* table : kSeriesTables) {
      Statement del(db, fmt::format("DELETE FROM main.{} WHERE run_id = ?1", table));
      del.bind_text(1, run_id);
      del.run();
      const auto shared = shared_columns(db, table);
      if (shared.empty()) continue;  // the file has no such table (an older batchlab's)
      const std::string cols = join(shared);
      Statement copy(db, fmt::format("INSERT INTO main.{0}({1}) SELECT {1} FROM job.{0} "
                                     "WHERE run_id = ?1",
                                     table, cols));
      copy.bind_text(1, run_id);
      try {
        copy.run();
      } catch (const StoreInputError&) {
        throw;
      } catch (const StoreError& e) {
        // Rows a records file's own index finds for this run that break the sweep database's
        // constraints (a step row whose run id is not the one its index holds: a damaged file
        // SQLite reads without complaint) are bad input like a damaged page, not a store failure
        // (found by fuzz_ingest; the caller names the records file).
        if (db.last_error_code() != SQLITE_CONSTRAINT) throw;
        throw StoreInputError(db.path(), fmt::format("{} rows of run {}", table, run_id),
                              e.sqlite_message());
      }
      out.rows += db.changes();
    }
    return out;
  }

  std::vector<IngestedRun> ingest(const std::string& records_db,
                                  const std::optional<std::string>& only_run,
                                  const IngestOptions& options) {
    require_file(records_db, "records file");
    Attached attached(db, records_db);
    if (!job_has_runs(records_db)) return {};
    std::vector<std::string> run_ids;
    if (only_run) {
      run_ids.push_back(*only_run);
    } else {
      Statement list(db, "SELECT run_id FROM job.runs ORDER BY run_id");
      while (list.step()) run_ids.push_back(list.column_text(0));
    }
    std::vector<IngestedRun> out;
    DeferredTransaction tx(db);
    for (const auto& id : run_ids) {
      try {
        if (auto run = fold(id, options)) out.push_back(std::move(*run));
      } catch (const StoreInputError& e) {
        // SQLite found a damaged page (SQLITE_CORRUPT, SQLITE_NOTADB) while copying: bad input,
        // exit 2, not a store failure (found by fuzz_ingest). The records file is read through
        // the target's connection, so the message names both.
        throw StoreInputError(
            records_db,
            fmt::format("cannot ingest run {} into {}: a database is damaged; the records file is "
                        "the one to suspect (check the target with batchlab query --db {}), and "
                        "a damaged records file is rebuilt by running its job again",
                        id, db.path(), db.path()),
            e.sqlite_message());
      } catch (const StoreError& e) {
        throw StoreError(db.path(), fmt::format("cannot ingest run {} from {}", id, records_db),
                         e.sqlite_message());
      }
    }
    tx.commit();
    return out;
  }
};

Ingester::Ingester(const std::string& target_db, StoreOptions options) {
  // Store creates the file, sets WAL and migrates; the ingest then works on its own connection.
  { Store store(target_db, options); }
  impl_ = std::make_unique<Impl>(target_db);
  sqlite3_busy_timeout(impl_->db.get(), static_cast<int>(options.busy_timeout.count()));
  impl_->db.exec("PRAGMA foreign_keys = ON", "cannot enable foreign keys");
  impl_->db.exec("PRAGMA synchronous = NORMAL", "cannot set synchronous mode");
}

Ingester::~Ingester() = default;

const std::string& Ingester::path() const noexcept { return impl_->db.path(); }

void Ingester::register_plan(const SweepRow& sweep, const std::vector<RunRow>& runs) {
  Connection& db = impl_->db;
  Transaction tx(db);
  {
    SweepRow row = sweep;
    if (!row.created_at) row.created_at = utc_now();
    const auto& cols = RowCodec<SweepRow>::columns();
    Statement stmt(db,
                   fmt::format("INSERT INTO sweeps({}) VALUES({}) ON CONFLICT(sweep_id) DO "
                               "UPDATE SET name = excluded.name, spec_toml = excluded.spec_toml",
                               join_columns(cols), placeholders(cols.size())));
    RowCodec<SweepRow>::bind(stmt, row);
    stmt.run();
  }
  Statement stmt(db, register_run_sql());
  for (const RunRow& run : runs) {
    RunRow row = run;
    row.sweep_id = sweep.sweep_id;
    row.status = std::string(run_status::kPlanned);
    row.attempts = 0;
    stmt.reset();
    RowCodec<RunRow>::bind(stmt, row);
    try {
      stmt.run();
    } catch (const StoreError& e) {
      throw StoreError(db.path(), fmt::format("cannot plan run {}", run.run_id),
                       e.sqlite_message());
    }
  }
  tx.commit();
}

std::vector<IngestedRun> Ingester::ingest(const std::string& records_db,
                                          const IngestOptions& options) {
  return impl_->ingest(records_db, std::nullopt, options);
}

std::optional<IngestedRun> Ingester::ingest_run(const std::string& records_db,
                                                const std::string& run_id,
                                                const IngestOptions& options) {
  auto runs = impl_->ingest(records_db, run_id, options);
  if (runs.empty()) return std::nullopt;
  return std::move(runs.front());
}

bool finalize_record(const std::string& records_db, const std::string& run_id,
                     std::string_view status, const std::string& error) {
  require_file(records_db, "records file");
  Store store(records_db);
  auto run = store.get_run(run_id);
  if (!run || run->status != run_status::kRunning) return false;
  store.set_run_status(run_id, status, error);
  return true;
}

void snapshot_database(const std::string& source_db, const std::string& out_path) {
  require_file(source_db, "database");
  const std::string tmp = fmt::format("{}.tmp-{}", out_path, ::getpid());
  std::error_code ec;
  std::filesystem::remove(tmp, ec);
  {
    // Read-write so that the WAL of a killed writer can be recovered; nothing is written here.
    Connection source(source_db, SQLITE_OPEN_READWRITE);
    sqlite3_busy_timeout(source.get(), 30000);
    Statement vacuum(source, "VACUUM INTO ?1");
    vacuum.bind_text(1, tmp);
    vacuum.run();
  }
  {
    Connection copy(tmp, SQLITE_OPEN_READWRITE);
    copy.pragma_set("journal_mode", "DELETE");
  }
  std::filesystem::rename(tmp, out_path, ec);
  if (ec) {
    std::filesystem::remove(tmp);
    throw StoreError(out_path, "cannot move the snapshot into place", ec.message());
  }
}

}  // namespace batchlab::results
