// Read-only SQL for `batchlab query` and for analysis code: one statement, a connection opened
// with SQLITE_OPEN_READONLY (and PRAGMA query_only), and a check that the statement cannot write
// (sqlite3_stmt_readonly; ATTACH/DETACH refused), so a query can run beside a training job's
// writer without risk to its data. In WAL mode the reader neither blocks nor is blocked by it.
#pragma once

#include <string>

#include "results/query_result.h"

namespace batchlab::results {

// Runs one read-only statement. Throws StoreInputError for a missing database file, empty SQL,
// more than one statement, a statement that could write, ATTACH/DETACH, or SQL that SQLite
// rejects (syntax, unknown table or column); StoreError for anything else (a lock held past the
// 30 s busy timeout, I/O errors).
QueryResult query_readonly(const std::string& db_path, const std::string& sql);

}  // namespace batchlab::results
