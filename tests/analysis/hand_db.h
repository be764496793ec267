// Databases written by hand with raw SQL, as another program would write them: the study tables
// with exactly the DDL of the documented contract (schema v3, C3), and sweep databases with the
// schema's own migration scripts, filled with chosen rows so a test knows every expected number.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>

#include "results/schema.h"

namespace batchlab::analysis::testing {

// The study tables as documented (contract C3), and noise_scale as in DESIGN.md.
inline const char* kStudyDdl = R"sql(
CREATE TABLE study_cells(
  cell_id TEXT PRIMARY KEY,
  sweep_id TEXT NOT NULL,
  optimizer TEXT NOT NULL,
  global_batch INTEGER NOT NULL,
  seed INTEGER NOT NULL,
  cell_toml TEXT NOT NULL,
  target_metric TEXT NOT NULL, target_value REAL NOT NULL,
  lr_center REAL NOT NULL, lr_factor REAL NOT NULL,
  cap_steps INTEGER NOT NULL, warmup_steps INTEGER NOT NULL,
  status TEXT NOT NULL,
  best_run_id TEXT, best_lr REAL,
  steps_to_target REAL,
  samples_to_target REAL,
  updated_at TEXT);
CREATE TABLE study_trials(
  run_id TEXT PRIMARY KEY,
  cell_id TEXT NOT NULL REFERENCES study_cells(cell_id),
  base_lr REAL NOT NULL,
  lr_index INTEGER NOT NULL,
  outcome TEXT NOT NULL,
  last_step INTEGER,
  steps_to_target REAL,
  samples_trained INTEGER,
  cap_samples INTEGER,
  reason TEXT,
  decided_at TEXT);
CREATE TABLE noise_scale(run_id TEXT NOT NULL, step INTEGER NOT NULL, b_small INTEGER,
  b_big INTEGER, g2 REAL, trace_sigma REAL, b_simple REAL, PRIMARY KEY (run_id, step));
)sql";

class HandDb {
 public:
  explicit HandDb(const std::string& path) : path_(path) {
    EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK) << path;
  }
  ~HandDb() { sqlite3_close(db_); }
  HandDb(const HandDb&) = delete;
  HandDb& operator=(const HandDb&) = delete;

  void exec(const std::string& sql) {
    char* error = nullptr;
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error);
    EXPECT_EQ(rc, SQLITE_OK) << (error ? error : "") << "\nin: " << sql.substr(0, 200);
    sqlite3_free(error);
  }
  // Every migration of the schema batchlab writes (runs, evals with val_*, study tables, ...).
  void create_sweep_schema() {
    for (int v = 1; v <= results::latest_schema_version(); ++v) exec(results::migration_script(v));
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
};

}  // namespace batchlab::analysis::testing
