#include "results/sqlite_util.h"

#include <sqlite3.h>

#include <utility>

#include "results/errors.h"
#include "results/lock_holders.h"

namespace batchlab::results {

bool is_damaged_database(int primary_code) noexcept {
  return primary_code == SQLITE_CORRUPT || primary_code == SQLITE_NOTADB;
}

std::string damaged_database_context(std::string_view context) {
  return "the database file is corrupt or not a SQLite database (" + std::string(context) +
         "); restore it from a copy (batchlab results snapshot makes one of a live database), or "
         "build a new one from the runs' records files with batchlab results ingest --db NEW.db "
         "RUNS_FOLDER";
}

bool is_locked_database(int primary_code) noexcept {
  return primary_code == SQLITE_BUSY || primary_code == SQLITE_LOCKED;
}

std::string locked_database_context(const std::string& path, std::string_view context) {
  const std::string holders = describe_lock_holders(path);
  return "the database is locked" + (holders.empty() ? std::string() : ": " + holders) +
         "; gave up after the busy timeout (" + std::string(context) +
         "). A reader waits only for a writer in rollback-journal mode or a connection in "
         "PRAGMA locking_mode = EXCLUSIVE (batchlab writes in WAL mode, where readers never "
         "wait); run the command again once that process is done";
}

Connection::Connection(std::string path, int flags) : Connection(path, flags, path) {}

Connection::Connection(std::string path, int flags, const std::string& uri)
    : path_(std::move(path)) {
  sqlite3* db = nullptr;
  if (uri != path_) flags |= SQLITE_OPEN_URI;
  const int rc = sqlite3_open_v2(uri.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    // sqlite3_open_v2 hands back a handle even on failure; it only carries the message.
    std::string message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    throw StoreError(path_, "cannot open database", message);
  }
  db_ = db;
  // Extended codes tell SQLITE_READONLY_DBMOVED from a plain read-only file, etc.
  sqlite3_extended_result_codes(db_, 1);
}

Connection::~Connection() {
  // sqlite3_close_v2 defers the close until every statement is finalized, so destruction order
  // between a connection and statements that outlive it by mistake cannot corrupt anything.
  if (db_ != nullptr) sqlite3_close_v2(db_);
}

Connection::Connection(Connection&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)) {}

Connection& Connection::operator=(Connection&& other) noexcept {
  if (this != &other) {
    if (db_ != nullptr) sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

std::int64_t Connection::changes() const noexcept { return sqlite3_changes(db_); }

int Connection::last_error_code() const noexcept { return sqlite3_errcode(db_) & 0xff; }

std::string Connection::last_message() const {
  return db_ != nullptr ? std::string(sqlite3_errmsg(db_)) : std::string("no connection");
}

void Connection::fail(std::string_view context) const {
  if (db_ != nullptr && is_damaged_database(last_error_code())) {
    throw StoreInputError(path_, damaged_database_context(context), last_message());
  }
  if (db_ != nullptr && is_locked_database(last_error_code())) {
    throw StoreError(path_, locked_database_context(path_, context), last_message());
  }
  throw StoreError(path_, std::string(context), last_message());
}

void Connection::exec(const std::string& sql, std::string_view context) {
  char* message = nullptr;
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message);
  if (rc != SQLITE_OK) {
    std::string text = message != nullptr ? message : sqlite3_errstr(rc);
    sqlite3_free(message);
    if (is_damaged_database(rc & 0xff)) {
      throw StoreInputError(path_, damaged_database_context(context), text);
    }
    if (is_locked_database(rc & 0xff)) {
      throw StoreError(path_, locked_database_context(path_, context), text);
    }
    throw StoreError(path_, std::string(context), text);
  }
}

std::int64_t Connection::pragma_int(std::string_view name) {
  Statement stmt(*this, "PRAGMA " + std::string(name));
  if (!stmt.step()) fail("PRAGMA " + std::string(name) + " returned nothing");
  return stmt.column_int64(0);
}

std::string Connection::pragma_set(std::string_view name, std::string_view value) {
  Statement stmt(*this, "PRAGMA " + std::string(name) + " = " + std::string(value));
  std::string answer;
  if (stmt.step()) answer = stmt.column_text(0);
  while (stmt.step()) {
  }
  return answer;
}

Statement::Statement(Connection& db, std::string_view sql) : db_(db) {
  const int rc =
      sqlite3_prepare_v2(db.get(), sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr);
  if (rc != SQLITE_OK) {
    db.fail("cannot prepare `" + std::string(sql) + "`");
  }
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

void Statement::reset() noexcept {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

void Statement::check_bind(int rc, int index) {
  if (rc != SQLITE_OK) {
    db_.fail("cannot bind parameter " + std::to_string(index) + " of `" + sqlite3_sql(stmt_) + "`");
  }
}

void Statement::bind_null(int index) { check_bind(sqlite3_bind_null(stmt_, index), index); }

void Statement::bind_int64(int index, std::int64_t value) {
  check_bind(sqlite3_bind_int64(stmt_, index, value), index);
}

void Statement::bind_double(int index, double value) {
  check_bind(sqlite3_bind_double(stmt_, index, value), index);
}

void Statement::bind_text(int index, std::string_view value) {
  // SQLITE_TRANSIENT: SQLite copies, so callers may pass temporaries.
  check_bind(
      sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8),
      index);
}

void Statement::bind_int64(int index, const std::optional<std::int64_t>& value) {
  if (value) {
    bind_int64(index, *value);
  } else {
    bind_null(index);
  }
}

void Statement::bind_double(int index, const std::optional<double>& value) {
  if (value) {
    bind_double(index, *value);
  } else {
    bind_null(index);
  }
}

void Statement::bind_text(int index, const std::optional<std::string>& value) {
  if (value) {
    bind_text(index, std::string_view(*value));
  } else {
    bind_null(index);
  }
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_.fail(std::string("cannot execute `") + sqlite3_sql(stmt_) + "`");
}

void Statement::run() {
  while (step()) {
  }
  reset();
}

int Statement::column_count() const noexcept { return sqlite3_column_count(stmt_); }

bool Statement::column_is_null(int index) const noexcept {
  return sqlite3_column_type(stmt_, index) == SQLITE_NULL;
}

std::int64_t Statement::column_int64(int index) const noexcept {
  return sqlite3_column_int64(stmt_, index);
}

double Statement::column_double(int index) const noexcept {
  return sqlite3_column_double(stmt_, index);
}

std::string Statement::column_text(int index) const {
  const auto* text = sqlite3_column_text(stmt_, index);
  const int size = sqlite3_column_bytes(stmt_, index);
  if (text == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(text), static_cast<std::size_t>(size));
}

std::optional<std::int64_t> Statement::column_opt_int64(int index) const noexcept {
  if (column_is_null(index)) return std::nullopt;
  return column_int64(index);
}

std::optional<double> Statement::column_opt_double(int index) const noexcept {
  if (column_is_null(index)) return std::nullopt;
  return column_double(index);
}

std::optional<std::string> Statement::column_opt_text(int index) const {
  if (column_is_null(index)) return std::nullopt;
  return column_text(index);
}

Transaction::Transaction(Connection& db) : db_(db) {
  db_.exec("BEGIN IMMEDIATE", "cannot begin a write transaction");
  open_ = true;
}

Transaction::~Transaction() {
  if (open_) {
    // A failed statement may already have rolled SQLite back; ROLLBACK then fails harmlessly.
    sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
  }
}

void Transaction::commit() {
  db_.exec("COMMIT", "cannot commit");
  open_ = false;
}

}  // namespace batchlab::results
