// The database schema and its forward-only migrations. PRAGMA user_version holds the version a
// file is at; migration N takes a file from version N-1 to N inside one transaction, so a crash
// mid-migration leaves the file at N-1, never half-way.
//
// Version 1 is exactly the tables of DESIGN.md "Database (the contract)". Version 2 adds what a
// real trainer records beyond it: the `nonfinite` column (SQLite stores NaN as NULL, so non-finite
// values are written as NULL and named there), the physical-batch and data-accounting columns of
// runs, the training clock (runs.train_s) and the evaluation time (evals.eval_s). Version 3 adds
// the validation metrics (evals.val_loss, evals.val_acc) and the scaling-study tables study_cells
// and study_trials (docs/sweeps.md, "Studies").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace batchlab::results {

class Connection;

// The version this code writes and understands; the number of migrations.
int latest_schema_version();

// The SQL script that takes a database from version `to_version - 1` to `to_version`
// (1 <= to_version <= latest_schema_version()). It does not set user_version; migrate() does, in
// the same transaction.
const std::string& migration_script(int to_version);

// PRAGMA user_version of an open database (0 for a new, empty file).
std::int64_t schema_version(Connection& db);

// Applies every migration the database lacks, one transaction each, and returns the version it
// found. Throws StoreInputError naming the file and both versions when the file is newer than
// this code, rather than writing rows a newer schema may not expect.
std::int64_t migrate(Connection& db);

}  // namespace batchlab::results
