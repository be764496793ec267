// Schema tests: every table and column of DESIGN.md "Database (the contract)" exists, the version
// is the latest, version-1 and version-2 files migrate in place with their rows intact, and a file
// from a newer batchlab is refused.
#include "results/schema.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "results/errors.h"
#include "results/store.h"
#include "tests/results/test_support.h"

namespace batchlab::results {
namespace {

using testing::RawDb;
using testing::TempDir;

std::vector<std::string> columns_of(RawDb& db, const std::string& table) {
  std::vector<std::string> names;
  for (const auto& row :
       db.rows("SELECT name FROM pragma_table_info('" + table + "') ORDER BY cid")) {
    names.push_back(row[0].value());
  }
  return names;
}

std::vector<std::string> primary_key_of(RawDb& db, const std::string& table) {
  std::vector<std::string> names;
  for (const auto& row :
       db.rows("SELECT name FROM pragma_table_info('" + table + "') WHERE pk > 0 ORDER BY pk")) {
    names.push_back(row[0].value());
  }
  return names;
}

// Verbatim from DESIGN.md; the contract other folders query against.
const std::map<std::string, std::vector<std::string>>& contract_tables() {
  static const std::map<std::string, std::vector<std::string>> tables = {
      {"sweeps", {"sweep_id", "name", "spec_toml", "created_at"}},
      {"runs",
       {"run_id",    "sweep_id",     "status",       "config_toml",   "model",      "dataset",
        "optimizer", "global_batch", "micro_batch",  "accum_steps",   "world_size", "base_lr",
        "peak_lr",   "scaling",      "warmup_steps", "seed",          "attempts",   "error",
        "host",      "device",       "git_sha",      "torch_version", "started_at", "finished_at"}},
      {"steps",
       {"run_id", "step", "epoch", "samples", "wall_s", "lr", "train_loss", "grad_norm",
        "samples_per_s"}},
      {"evals",
       {"run_id", "step", "epoch", "samples", "wall_s", "train_loss", "train_acc", "test_loss",
        "test_acc", "gap_loss", "gap_acc"}},
      {"layer_stats",
       {"run_id", "step", "layer", "numel", "weight_norm", "grad_norm", "ratio", "trust_ratio",
        "update_norm"}},
      {"noise_scale", {"run_id", "step", "b_small", "b_big", "g2", "trace_sigma", "b_simple"}},
      {"milestones", {"run_id", "metric", "target", "step", "epoch", "samples", "wall_s"}},
  };
  return tables;
}

// Columns added in version 2, after the contract's columns.
const std::map<std::string, std::vector<std::string>>& version2_additions() {
  static const std::map<std::string, std::vector<std::string>> added = {
      {"steps", {"nonfinite"}},
      {"evals", {"nonfinite", "eval_s"}},
      {"layer_stats", {"nonfinite"}},
      {"noise_scale", {"nonfinite"}},
      {"runs",
       {"threads", "bn_group", "train_size", "steps_per_epoch", "total_steps",
        "samples_dropped_per_epoch", "last_step", "train_s"}},
  };
  return added;
}

// Version 3 (contract C3 of issue 13): validation metrics and the study tables.
const std::map<std::string, std::vector<std::string>>& version3_additions() {
  static const std::map<std::string, std::vector<std::string>> added = {
      {"evals", {"val_loss", "val_acc"}},
  };
  return added;
}

// Version 4 (issue 24): the stop contract's record (core/stop_request.h).
const std::map<std::string, std::vector<std::string>>& version4_additions() {
  static const std::map<std::string, std::vector<std::string>> added = {
      {"runs", {"stop_reason"}},
  };
  return added;
}

// Version 5 (issue 24): the cluster job of a run's latest submission.
const std::map<std::string, std::vector<std::string>>& version5_additions() {
  static const std::map<std::string, std::vector<std::string>> added = {
      {"runs", {"scheduler_job"}},
  };
  return added;
}

// Version 6 (issue 35): why a run's series started over although it had checkpoints.
const std::map<std::string, std::vector<std::string>>& version6_additions() {
  static const std::map<std::string, std::vector<std::string>> added = {
      {"runs", {"started_over"}},
  };
  return added;
}

const std::map<std::string, std::vector<std::string>>& version7_additions() {
  static const std::map<std::string, std::vector<std::string>> added = {
      {"runs", {"chance_acc"}},
  };
  return added;
}

const std::map<std::string, std::vector<std::string>>& study_tables() {
  static const std::map<std::string, std::vector<std::string>> tables = {
      {"study_cells",
       {"cell_id", "sweep_id", "optimizer", "global_batch", "seed", "cell_toml", "target_metric",
        "target_value", "lr_center", "lr_factor", "cap_steps", "warmup_steps", "status",
        "best_run_id", "best_lr", "steps_to_target", "samples_to_target", "updated_at"}},
      {"study_trials",
       {"run_id", "cell_id", "base_lr", "lr_index", "outcome", "last_step", "steps_to_target",
        "samples_trained", "cap_samples", "reason", "decided_at"}},
      // Schema version 8: fixed-budget searches.
      {"budget_cells",
       {"cell_id",    "sweep_id",        "optimizer",    "global_batch",    "seed",
        "cell_toml",  "series",          "budget_steps", "epochs",          "rung_steps",
        "eta",        "points",          "knobs",        "status",          "best_run_id",
        "best_point", "first_seed_cell", "trials",       "samples_trained", "updated_at"}},
      {"budget_trials",
       {"run_id", "cell_id", "point_index", "point", "rung", "outcome", "last_step", "metric",
        "samples_trained", "decided_at"}},
  };
  return tables;
}

TEST(Schema, NewDatabaseHasEveryContractTableAndColumn) {
  TempDir dir;
  const std::string path = dir.file("new.db");
  { Store store(path); }
  RawDb db(path);
  for (const auto& [table, contract] : contract_tables()) {
    std::vector<std::string> expected = contract;
    for (const auto* additions :
         {&version2_additions(), &version3_additions(), &version4_additions(),
          &version5_additions(), &version6_additions(), &version7_additions()}) {
      auto added = additions->find(table);
      if (added != additions->end()) {
        expected.insert(expected.end(), added->second.begin(), added->second.end());
      }
    }
    EXPECT_EQ(columns_of(db, table), expected) << table;
  }
  for (const auto& [table, columns] : study_tables()) {
    EXPECT_EQ(columns_of(db, table), columns) << table;
  }
  EXPECT_EQ(db.integer("PRAGMA user_version"), latest_schema_version());
  EXPECT_EQ(latest_schema_version(), 8);
  EXPECT_EQ(db.value("PRAGMA journal_mode"), "wal");
}

TEST(Schema, PrimaryKeysMakeResumedRowsRewriteNotDuplicate) {
  TempDir dir;
  const std::string path = dir.file("keys.db");
  { Store store(path); }
  RawDb db(path);
  using V = std::vector<std::string>;
  EXPECT_EQ(primary_key_of(db, "sweeps"), (V{"sweep_id"}));
  EXPECT_EQ(primary_key_of(db, "runs"), (V{"run_id"}));
  EXPECT_EQ(primary_key_of(db, "steps"), (V{"run_id", "step"}));
  EXPECT_EQ(primary_key_of(db, "evals"), (V{"run_id", "step"}));
  EXPECT_EQ(primary_key_of(db, "noise_scale"), (V{"run_id", "step"}));
  EXPECT_EQ(primary_key_of(db, "layer_stats"), (V{"run_id", "step", "layer"}));
  EXPECT_EQ(primary_key_of(db, "milestones"), (V{"run_id", "metric", "target"}));
  EXPECT_EQ(primary_key_of(db, "study_cells"), (V{"cell_id"}));
  EXPECT_EQ(primary_key_of(db, "study_trials"), (V{"run_id"}));
}

// The common reads (a run's steps or evals in step order) must be index range scans, with no
// full scan and no sort.
TEST(Schema, CommonQueriesUseAnIndex) {
  TempDir dir;
  const std::string path = dir.file("plan.db");
  { Store store(path); }
  RawDb db(path);
  const std::vector<std::string> queries = {
      "SELECT * FROM steps WHERE run_id = 'r' ORDER BY step",
      "SELECT * FROM evals WHERE run_id = 'r' ORDER BY step",
      "SELECT * FROM layer_stats WHERE run_id = 'r' AND layer = 'fc' ORDER BY step",
      "SELECT * FROM runs WHERE sweep_id = 's'",
      "SELECT * FROM milestones WHERE metric = 'test_acc' AND target = 0.75",
  };
  for (const auto& sql : queries) {
    std::string plan;
    for (const auto& row : db.rows("EXPLAIN QUERY PLAN " + sql)) plan += row[3].value() + "; ";
    EXPECT_THAT(plan, ::testing::HasSubstr("SEARCH")) << sql << " -> " << plan;
    EXPECT_THAT(plan, ::testing::Not(::testing::HasSubstr("TEMP B-TREE"))) << sql << " -> " << plan;
  }
}

TEST(Schema, MigratesVersion1FileWithRowsIntact) {
  TempDir dir;
  const std::string path = dir.file("v1.db");
  {
    RawDb db(path);
    db.exec(migration_script(1));
    db.exec("PRAGMA user_version = 1");
    db.exec(
        "INSERT INTO sweeps VALUES('s1', 'bs-sweep', 'x = 1', '2024-01-01T00:00:00Z');"
        "INSERT INTO runs(run_id, sweep_id, status, model, global_batch, attempts) "
        "  VALUES('r1', 's1', 'done', 'resnet20', 4096, 2);"
        "INSERT INTO steps VALUES('r1', 1, 0.5, 4096, 1.5, 0.1, 2.3, 4.0, 2730.0);"
        "INSERT INTO evals VALUES('r1', 1, 0.5, 4096, 1.5, 2.0, 0.3, 2.2, 0.28, 0.2, 0.02);"
        "INSERT INTO layer_stats VALUES('r1', 1, 'conv1', 432, 3.0, 0.5, 6.0, 1.0, 0.01);"
        "INSERT INTO noise_scale VALUES('r1', 1, 128, 4096, 0.7, 90.0, 128.5);"
        "INSERT INTO milestones VALUES('r1', 'test_acc', 0.25, 1, 0.5, 4096, 1.5);");
  }

  Store store(path);
  EXPECT_EQ(store.schema_version(), latest_schema_version());

  const auto run = store.get_run("r1");
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(run->status, "done");
  EXPECT_EQ(run->model, "resnet20");
  EXPECT_EQ(run->global_batch, 4096);
  EXPECT_EQ(run->attempts, 2);
  EXPECT_FALSE(run->threads.has_value());
  EXPECT_FALSE(run->train_s.has_value());
  EXPECT_FALSE(run->last_step.has_value());

  const auto steps = store.read_steps("r1");
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].samples, 4096);
  EXPECT_DOUBLE_EQ(steps[0].train_loss.value(), 2.3);
  const auto evals = store.read_evals("r1");
  ASSERT_EQ(evals.size(), 1u);
  EXPECT_DOUBLE_EQ(evals[0].test_acc.value(), 0.28);
  EXPECT_FALSE(evals[0].eval_s.has_value());
  EXPECT_EQ(store.read_layer_stats("r1").size(), 1u);
  EXPECT_EQ(store.read_noise("r1").size(), 1u);
  EXPECT_EQ(store.read_milestones("r1").size(), 1u);

  RawDb db(path);
  EXPECT_EQ(db.integer("PRAGMA user_version"), latest_schema_version());
  EXPECT_FALSE(db.value("SELECT nonfinite FROM steps").has_value());
  EXPECT_FALSE(db.value("SELECT eval_s FROM evals").has_value());
  EXPECT_FALSE(db.value("SELECT samples_dropped_per_epoch FROM runs").has_value());
  EXPECT_EQ(db.integer("SELECT count(*) FROM sweeps"), 1);
}

// A version-2 file (written by the batchlab before studies) gains the validation columns, empty,
// and the study tables, with its rows intact; new rows then carry validation metrics.
TEST(Schema, MigratesVersion2FileToVersion3WithRowsIntact) {
  TempDir dir;
  const std::string path = dir.file("v2.db");
  {
    RawDb db(path);
    db.exec(migration_script(1));
    db.exec(migration_script(2));
    db.exec("PRAGMA user_version = 2");
    db.exec(
        "INSERT INTO runs(run_id, status, attempts, total_steps) VALUES('r1', 'done', 1, 8);"
        "INSERT INTO evals(run_id, step, epoch, samples, wall_s, test_acc, eval_s) "
        "  VALUES('r1', 8, 1.0, 1024, 2.0, 0.81, 0.5);");
  }

  Store store(path);
  EXPECT_EQ(store.schema_version(), latest_schema_version());
  auto evals = store.read_evals("r1");
  ASSERT_EQ(evals.size(), 1u);
  EXPECT_DOUBLE_EQ(evals[0].test_acc.value(), 0.81);
  EXPECT_EQ(evals[0].eval_s, 0.5);
  EXPECT_FALSE(evals[0].val_loss.has_value());
  EXPECT_FALSE(evals[0].val_acc.has_value());
  EXPECT_EQ(store.get_run("r1")->total_steps, 8);
  EXPECT_FALSE(store.get_run("r1")->started_over.has_value());  // version 6, empty
  EXPECT_FALSE(store.get_run("r1")->chance_acc.has_value());    // version 7, empty
  EXPECT_TRUE(store.read_study_cells().empty());

  EvalRow next = evals[0];
  next.step = 9;
  next.val_loss = 0.42;
  next.val_acc = 0.87;
  store.write_evals({next});
  evals = store.read_evals("r1");
  ASSERT_EQ(evals.size(), 2u);
  EXPECT_EQ(evals[1].val_loss, 0.42);
  EXPECT_EQ(evals[1].val_acc, 0.87);

  RawDb db(path);
  EXPECT_EQ(db.integer("PRAGMA user_version"), latest_schema_version());
  EXPECT_EQ(db.value("SELECT val_acc FROM evals WHERE step = 9"), "0.87");
  EXPECT_FALSE(db.value("SELECT val_acc FROM evals WHERE step = 8").has_value());
  EXPECT_EQ(db.integer("SELECT count(*) FROM study_trials"), 0);
}

TEST(Schema, ReopeningLatestIsANoOp) {
  TempDir dir;
  const std::string path = dir.file("again.db");
  { Store store(path); }
  { Store store(path); }
  RawDb db(path);
  EXPECT_EQ(db.integer("PRAGMA user_version"), latest_schema_version());
}

TEST(Schema, NewerFileIsRejectedNamingFileAndVersions) {
  TempDir dir;
  const std::string path = dir.file("future.db");
  {
    RawDb db(path);
    db.exec("CREATE TABLE future(x)");
    db.exec("PRAGMA user_version = 99");
  }
  try {
    Store store(path);
    FAIL() << "a newer schema must be refused";
  } catch (const StoreInputError& e) {
    const std::string what = e.what();
    EXPECT_THAT(what, ::testing::HasSubstr(path));
    EXPECT_THAT(what, ::testing::HasSubstr("99"));
    EXPECT_THAT(what, ::testing::HasSubstr(std::to_string(latest_schema_version())));
  }
  RawDb db(path);
  EXPECT_EQ(db.integer("PRAGMA user_version"), 99);  // untouched
}

TEST(Schema, FileThatIsNotADatabaseIsAnInputError) {
  TempDir dir;
  const std::string path = dir.file("notes.txt");
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    const std::string text(4096, 'x');
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
  EXPECT_THROW(Store store(path), StoreInputError);
}

TEST(Schema, MigrationScriptOutOfRangeThrows) {
  EXPECT_THROW(migration_script(0), StoreError);
  EXPECT_THROW(migration_script(latest_schema_version() + 1), StoreError);
}

}  // namespace
}  // namespace batchlab::results
