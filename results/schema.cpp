#include "results/schema.h"

#include <fmt/format.h>

#include "results/errors.h"
#include "results/sqlite_util.h"

namespace batchlab::results {

namespace {

// Per-step tables are WITHOUT ROWID: the (run_id, step...) primary key is then the table's own
// B-tree, so "all steps of a run in step order" is one range scan and no second index is stored.
// Child tables cascade on run deletion so removing a run never leaves orphaned series behind.
const char* const kVersion1 = R"sql(
CREATE TABLE sweeps(
  sweep_id   TEXT NOT NULL PRIMARY KEY,
  name       TEXT NOT NULL,
  spec_toml  TEXT,
  created_at TEXT
);

CREATE TABLE runs(
  run_id        TEXT NOT NULL PRIMARY KEY,
  sweep_id      TEXT REFERENCES sweeps(sweep_id),
  status        TEXT NOT NULL,
  config_toml   TEXT,
  model         TEXT,
  dataset       TEXT,
  optimizer     TEXT,
  global_batch  INTEGER,
  micro_batch   INTEGER,
  accum_steps   INTEGER,
  world_size    INTEGER,
  base_lr       REAL,
  peak_lr       REAL,
  scaling       TEXT,
  warmup_steps  INTEGER,
  seed          INTEGER,
  attempts      INTEGER NOT NULL DEFAULT 0,
  error         TEXT,
  host          TEXT,
  device        TEXT,
  git_sha       TEXT,
  torch_version TEXT,
  started_at    TEXT,
  finished_at   TEXT
);
CREATE INDEX runs_by_sweep ON runs(sweep_id, status);

CREATE TABLE steps(
  run_id        TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
  step          INTEGER NOT NULL,
  epoch         REAL,
  samples       INTEGER,
  wall_s        REAL,
  lr            REAL,
  train_loss    REAL,
  grad_norm     REAL,
  samples_per_s REAL,
  PRIMARY KEY (run_id, step)
) WITHOUT ROWID;

CREATE TABLE evals(
  run_id     TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
  step       INTEGER NOT NULL,
  epoch      REAL,
  samples    INTEGER,
  wall_s     REAL,
  train_loss REAL,
  train_acc  REAL,
  test_loss  REAL,
  test_acc   REAL,
  gap_loss   REAL,
  gap_acc    REAL,
  PRIMARY KEY (run_id, step)
) WITHOUT ROWID;

CREATE TABLE layer_stats(
  run_id      TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
  step        INTEGER NOT NULL,
  layer       TEXT NOT NULL,
  numel       INTEGER,
  weight_norm REAL,
  grad_norm   REAL,
  ratio       REAL,
  trust_ratio REAL,
  update_norm REAL,
  PRIMARY KEY (run_id, step, layer)
) WITHOUT ROWID;
-- One layer's trajectory over training (the LARS ratio plots) without scanning every layer.
CREATE INDEX layer_stats_by_layer ON layer_stats(run_id, layer, step);

CREATE TABLE noise_scale(
  run_id      TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
  step        INTEGER NOT NULL,
  b_small     INTEGER,
  b_big       INTEGER,
  g2          REAL,
  trace_sigma REAL,
  b_simple    REAL,
  PRIMARY KEY (run_id, step)
) WITHOUT ROWID;

CREATE TABLE milestones(
  run_id  TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
  metric  TEXT NOT NULL,
  target  REAL NOT NULL,
  step    INTEGER,
  epoch   REAL,
  samples INTEGER,
  wall_s  REAL,
  PRIMARY KEY (run_id, metric, target)
) WITHOUT ROWID;
-- Time-to-accuracy across a sweep: every run that reached one target.
CREATE INDEX milestones_by_target ON milestones(metric, target);
)sql";

// layer_stats and noise_scale get `nonfinite` too: ratio = weight_norm / grad_norm is inf for a
// layer with a zero gradient, and the unbiased |G|^2 of the noise scale can be zero.
const char* const kVersion2 = R"sql(
ALTER TABLE steps ADD COLUMN nonfinite TEXT;
ALTER TABLE evals ADD COLUMN nonfinite TEXT;
ALTER TABLE evals ADD COLUMN eval_s REAL;
ALTER TABLE layer_stats ADD COLUMN nonfinite TEXT;
ALTER TABLE noise_scale ADD COLUMN nonfinite TEXT;
ALTER TABLE runs ADD COLUMN threads INTEGER;
ALTER TABLE runs ADD COLUMN bn_group INTEGER;
ALTER TABLE runs ADD COLUMN train_size INTEGER;
ALTER TABLE runs ADD COLUMN steps_per_epoch INTEGER;
ALTER TABLE runs ADD COLUMN total_steps INTEGER;
ALTER TABLE runs ADD COLUMN samples_dropped_per_epoch INTEGER;
ALTER TABLE runs ADD COLUMN last_step INTEGER;
ALTER TABLE runs ADD COLUMN train_s REAL;
CREATE INDEX runs_by_status ON runs(status);
)sql";

// Scaling studies (issue 13): the validation split's metrics, and the learning-rate search of each
// study cell with its trials' outcomes, so a study's result (and its fit) is computable from rows
// alone. study_trials.run_id does not reference runs: a trial is decided before its job records
// anything, and a study database written by another program needs no runs rows to be read.
const char* const kVersion3 = R"sql(
ALTER TABLE evals ADD COLUMN val_loss REAL;
ALTER TABLE evals ADD COLUMN val_acc REAL;

CREATE TABLE study_cells(
  cell_id           TEXT NOT NULL PRIMARY KEY,
  sweep_id          TEXT NOT NULL,
  optimizer         TEXT NOT NULL,
  global_batch      INTEGER NOT NULL,
  seed              INTEGER NOT NULL,
  cell_toml         TEXT NOT NULL,
  target_metric     TEXT NOT NULL,
  target_value      REAL NOT NULL,
  lr_center         REAL NOT NULL,
  lr_factor         REAL NOT NULL,
  cap_steps         INTEGER NOT NULL,
  warmup_steps      INTEGER NOT NULL,
  status            TEXT NOT NULL,
  best_run_id       TEXT,
  best_lr           REAL,
  steps_to_target   REAL,
  samples_to_target REAL,
  updated_at        TEXT
);
CREATE INDEX study_cells_by_sweep ON study_cells(sweep_id, optimizer, global_batch);

CREATE TABLE study_trials(
  run_id          TEXT NOT NULL PRIMARY KEY,
  cell_id         TEXT NOT NULL REFERENCES study_cells(cell_id),
  base_lr         REAL NOT NULL,
  lr_index        INTEGER NOT NULL,
  outcome         TEXT NOT NULL,
  last_step       INTEGER,
  steps_to_target REAL,
  samples_trained INTEGER,
  cap_samples     INTEGER,
  reason          TEXT,
  decided_at      TEXT
);
CREATE INDEX study_trials_by_cell ON study_trials(cell_id, lr_index);
)sql";

// The stop contract's record (issue 24, core/stop_request.h): a `stopped` run's reason as a value,
// so a study decides a trial's outcome from a column and not by parsing runs.error.
const char* const kVersion4 = R"sql(
ALTER TABLE runs ADD COLUMN stop_reason TEXT;
)sql";

// A run's job in the cluster scheduler (issue 24): the Slurm job of its latest submission ("123",
// or "123_4" for a task of an array), so the dashboard and reports can name the job that ran it.
const char* const kVersion5 = R"sql(
ALTER TABLE runs ADD COLUMN scheduler_job TEXT;
)sql";

// Why a run's series restarted from step 0 although it had checkpoints (issue 35): every one was
// unreadable (truncated, damaged). Without it a restarted series looks like a first attempt.
const char* const kVersion6 = R"sql(
ALTER TABLE runs ADD COLUMN started_over TEXT;
)sql";

// The accuracy of guessing, 1 / classes for a classifier (issue 36): a report notes a run that ends
// at or below it (a diverged or stalled large-batch run), which a bare 2.2% does not say.
const char* const kVersion7 = R"sql(
ALTER TABLE runs ADD COLUMN chance_acc REAL;
)sql";

// Fixed-budget searches ([search], issue 43): each cell's successive-halving search and its points,
// so a report computes every line's budget, best point and edges from rows alone.
const char* const kVersion8 = R"sql(
CREATE TABLE budget_cells(
  cell_id         TEXT NOT NULL PRIMARY KEY,
  sweep_id        TEXT NOT NULL,
  optimizer       TEXT NOT NULL,
  global_batch    INTEGER NOT NULL,
  seed            INTEGER NOT NULL,
  cell_toml       TEXT NOT NULL,
  series          TEXT NOT NULL,
  budget_steps    INTEGER NOT NULL,
  epochs          REAL,
  rung_steps      TEXT NOT NULL,
  eta             INTEGER NOT NULL,
  points          INTEGER NOT NULL,
  knobs           TEXT NOT NULL,
  status          TEXT NOT NULL,
  best_run_id     TEXT,
  best_point      TEXT,
  first_seed_cell TEXT,
  trials          INTEGER NOT NULL,
  samples_trained INTEGER NOT NULL,
  updated_at      TEXT
);
CREATE INDEX budget_cells_by_sweep ON budget_cells(sweep_id, optimizer, global_batch);

CREATE TABLE budget_trials(
  run_id          TEXT NOT NULL PRIMARY KEY,
  cell_id         TEXT NOT NULL REFERENCES budget_cells(cell_id),
  point_index     INTEGER NOT NULL,
  point           TEXT NOT NULL,
  rung            INTEGER NOT NULL,
  outcome         TEXT NOT NULL,
  last_step       INTEGER,
  metric          REAL,
  samples_trained INTEGER,
  decided_at      TEXT
);
CREATE INDEX budget_trials_by_cell ON budget_trials(cell_id, point_index);
)sql";

const std::vector<std::string>& migrations() {
  static const std::vector<std::string> scripts = {kVersion1, kVersion2, kVersion3, kVersion4,
                                                   kVersion5, kVersion6, kVersion7, kVersion8};
  return scripts;
}

}  // namespace

int latest_schema_version() { return static_cast<int>(migrations().size()); }

const std::string& migration_script(int to_version) {
  if (to_version < 1 || to_version > latest_schema_version()) {
    throw StoreError({}, fmt::format("no migration to schema version {} (known: 1..{})", to_version,
                                     latest_schema_version()));
  }
  return migrations()[static_cast<std::size_t>(to_version - 1)];
}

std::int64_t schema_version(Connection& db) { return db.pragma_int("user_version"); }

std::int64_t migrate(Connection& db) {
  const std::int64_t latest = latest_schema_version();
  const std::int64_t found = schema_version(db);
  auto check_not_newer = [&](std::int64_t version) {
    if (version > latest) {
      throw StoreInputError(db.path(),
                            fmt::format("database schema version {} is newer than this batchlab "
                                        "understands (version {}); use a newer batchlab",
                                        version, latest));
    }
  };
  check_not_newer(found);
  for (std::int64_t target = found + 1; target <= latest; ++target) {
    Transaction tx(db);
    // Another process may have migrated between our read and our write lock; re-read under it.
    const std::int64_t current = schema_version(db);
    check_not_newer(current);
    if (current >= target) continue;
    db.exec(migration_script(static_cast<int>(target)),
            fmt::format("migration to schema version {} failed", target));
    // user_version is part of the database header, so it commits or rolls back with the script.
    db.exec(fmt::format("PRAGMA user_version = {}", target), "cannot set schema version");
    tx.commit();
  }
  return found;
}

}  // namespace batchlab::results
