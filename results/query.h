// Read-only SQL for `batchlab query` and for analysis code: one statement, a connection opened
// with SQLITE_OPEN_READONLY (and PRAGMA query_only), and a check that the statement cannot write
// (sqlite3_stmt_readonly; ATTACH/DETACH refused), so a query can run beside a training job's
// writer without risk to its data. In WAL mode the reader neither blocks nor is blocked by it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "results/query_result.h"
#include "results/sqlite_util.h"

namespace batchlab::results {

// Opens `db_path` for reading with `flags` (SQLITE_OPEN_READONLY plus any of NOMUTEX, ...), leaving
// nothing beside it: a WAL-mode file whose -wal and -shm do not exist (no writer has it open) is
// opened immutable (SQLite would otherwise create both, empty, and leave them behind); a file that
// a writer has open (its -wal and -shm exist), or one in rollback-journal mode (whose readers
// create nothing), is opened as usual, so live writes stay visible.
Connection open_for_reading(const std::string& db_path, int flags);

// True when a WAL-mode database at `db_path` would be opened immutable by open_for_reading now.
bool opens_immutable(const std::string& db_path);

// How long a read waits for a lock another connection holds (a writer in rollback-journal mode,
// or one in exclusive locking mode; WAL readers never wait) before it fails.
inline constexpr std::chrono::milliseconds kReadBusyTimeout{30000};

// Runs one read-only statement. Throws StoreInputError for a missing database file, empty SQL,
// more than one statement, a statement that could write, ATTACH/DETACH, or SQL that SQLite
// rejects (syntax, unknown table or column); StoreError for anything else: a lock held past the
// busy timeout (saying that the database is locked and, where the kernel tells, by which process
// and lock: locked_database_context), I/O errors.
QueryResult query_readonly(const std::string& db_path, const std::string& sql);

// A value bound to a `?` of the statement (values never enter the SQL text).
using QueryParam = std::variant<std::string, std::int64_t, double>;

// The same with `params` bound to the statement's parameters in order; a statement whose
// parameter count differs from params.size() is a StoreInputError.
QueryResult query_readonly(const std::string& db_path, const std::string& sql,
                           const std::vector<QueryParam>& params);

// The same, waiting at most `busy_timeout` for a lock (kReadBusyTimeout above).
QueryResult query_readonly(const std::string& db_path, const std::string& sql,
                           const std::vector<QueryParam>& params,
                           std::chrono::milliseconds busy_timeout);

}  // namespace batchlab::results
