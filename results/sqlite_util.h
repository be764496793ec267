// Thin RAII layer over the SQLite C API: a connection, a prepared statement and an IMMEDIATE
// transaction. Every failure becomes a StoreError carrying the database path and SQLite's own
// message, so callers above this layer never look at result codes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace batchlab::results {

// Whether SQLite's primary result code says that the file itself is damaged or is no database at
// all (SQLITE_CORRUPT, SQLITE_NOTADB), as opposed to a mistake in a statement or a lock.
bool is_damaged_database(int primary_code) noexcept;
// The context of the StoreInputError thrown for such a file: that the file is corrupt or not a
// SQLite database, what was being done (`context`), and what to do about it.
std::string damaged_database_context(std::string_view context);

// Whether SQLite's primary result code says that another connection held a lock this one needed
// for longer than its busy timeout (SQLITE_BUSY, SQLITE_LOCKED): no fault of the input.
bool is_locked_database(int primary_code) noexcept;
// The context of the StoreError thrown for such a failure: that the database at `path` is locked,
// by which process and with what kind of lock when the kernel's lock table names it
// (lock_holders.h), what was being done (`context`), and what to do about it.
std::string locked_database_context(const std::string& path, std::string_view context);

class Connection {
 public:
  // flags are sqlite3_open_v2 flags. A connection is used by one thread at a time.
  Connection(std::string path, int flags);
  // Opens the SQLite URI `uri` (flags gain SQLITE_OPEN_URI); path() and messages name `path`.
  Connection(std::string path, int flags, const std::string& uri);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  Connection(Connection&& other) noexcept;
  Connection& operator=(Connection&& other) noexcept;

  sqlite3* get() const noexcept { return db_; }
  const std::string& path() const noexcept { return path_; }

  // Runs one or more statements that return no rows we need (DDL, PRAGMAs, BEGIN/COMMIT).
  void exec(const std::string& sql, std::string_view context);
  // Reads an integer PRAGMA such as user_version.
  std::int64_t pragma_int(std::string_view name);
  // Sets a PRAGMA and returns what SQLite reports back (journal_mode answers with the mode it got).
  std::string pragma_set(std::string_view name, std::string_view value);

  // Rows changed by the last INSERT/UPDATE/DELETE on this connection.
  std::int64_t changes() const noexcept;
  // SQLite's (primary) result code of the last failed call, e.g. SQLITE_NOTADB.
  int last_error_code() const noexcept;

  // The current SQLite error message of this connection.
  std::string last_message() const;
  // Throws StoreError (StoreInputError when the file is damaged: is_damaged_database; saying who
  // holds it when it is locked: is_locked_database) with the current SQLite message.
  [[noreturn]] void fail(std::string_view context) const;

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

class Statement {
 public:
  Statement(Connection& db, std::string_view sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Clears the previous execution and all bindings; call before binding a new row.
  void reset() noexcept;

  // Parameter indexes start at 1, as in SQLite.
  void bind_null(int index);
  void bind_int64(int index, std::int64_t value);
  void bind_double(int index, double value);
  void bind_text(int index, std::string_view value);
  void bind_text(int index, const std::string& value) { bind_text(index, std::string_view(value)); }
  void bind_text(int index, const char* value) { bind_text(index, std::string_view(value)); }
  void bind_int64(int index, const std::optional<std::int64_t>& value);
  void bind_double(int index, const std::optional<double>& value);
  void bind_text(int index, const std::optional<std::string>& value);

  // Advances one row: true while a row is available, false when done; throws on failure.
  bool step();
  // Executes a statement that returns no rows, then resets it.
  void run();

  // Column indexes start at 0, as in SQLite.
  int column_count() const noexcept;
  bool column_is_null(int index) const noexcept;
  std::int64_t column_int64(int index) const noexcept;
  double column_double(int index) const noexcept;
  std::string column_text(int index) const;
  std::optional<std::int64_t> column_opt_int64(int index) const noexcept;
  std::optional<double> column_opt_double(int index) const noexcept;
  std::optional<std::string> column_opt_text(int index) const;

  sqlite3_stmt* get() const noexcept { return stmt_; }

 private:
  void check_bind(int rc, int index);

  Connection& db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// Resets a cached statement however the scope is left, so a half-read SELECT never keeps a read
// transaction (and with it an old WAL snapshot) open.
class ResetOnExit {
 public:
  explicit ResetOnExit(Statement& stmt) : stmt_(stmt) {}
  ~ResetOnExit() { stmt_.reset(); }
  ResetOnExit(const ResetOnExit&) = delete;
  ResetOnExit& operator=(const ResetOnExit&) = delete;

 private:
  Statement& stmt_;
};

// BEGIN IMMEDIATE takes the write lock up front, so a transaction never fails half-way with
// SQLITE_BUSY on lock upgrade; busy_timeout covers the wait. Rolls back unless commit() ran.
class Transaction {
 public:
  explicit Transaction(Connection& db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  void commit();

 private:
  Connection& db_;
  bool open_ = false;
};

}  // namespace batchlab::results
