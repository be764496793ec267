// Study tables (schema version 3): cells and trials round-trip, are rewritten (not duplicated) as a
// study progresses, are read per sweep, refuse unknown statuses, and a trial needs its cell.
// Also: runs.status accepts `stopped`, a final status.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "results/errors.h"
#include "results/store.h"
#include "tests/results/test_support.h"

namespace batchlab::results {
namespace {

using testing::RawDb;
using testing::TempDir;

StudyCellRow cell(const std::string& id, const std::string& sweep, std::int64_t batch) {
  StudyCellRow row;
  row.cell_id = id;
  row.sweep_id = sweep;
  row.optimizer = "nesterov";
  row.global_batch = batch;
  row.seed = 0;
  row.cell_toml = "\"batch.global\" = " + std::to_string(batch) + "\n";
  row.target.metric = "val_acc";
  row.target.value = 0.88;
  row.lr_center = 0.1;
  row.lr_factor = 2.0;
  row.cap_steps = 4000;
  row.warmup_steps = 200;
  return row;
}

StudyTrialRow trial(const std::string& run_id, const std::string& cell_id, std::int64_t index) {
  StudyTrialRow row;
  row.run_id = run_id;
  row.cell_id = cell_id;
  row.lr_index = index;
  row.base_lr = 0.1 * (index >= 0 ? (1 << index) : 1.0 / (1 << -index));
  return row;
}

TEST(StudyTables, CellsAndTrialsRoundTripAndRewriteByKey) {
  TempDir dir;
  const std::string path = dir.file("study.db");
  Store store(path);
  store.upsert_sweep({"s1", "study", std::nullopt, std::nullopt});
  store.upsert_sweep({"s2", "other", std::nullopt, std::nullopt});
  store.write_study_cells({cell("c256", "s1", 256), cell("c64", "s1", 64), cell("x", "s2", 64)});
  store.write_study_trials({trial("r0", "c256", 0), trial("r1", "c256", -1), trial("q", "x", 0)});

  // The race decides: r0 reached, r1 stopped at r0's crossing step; the cell reached.
  StudyTrialRow won = trial("r0", "c256", 0);
  won.outcome = std::string(trial_outcome::kReached);
  won.last_step = 1200;
  won.steps_to_target = 1150.5;
  won.samples_trained = 1200 * 256;
  won.cap_samples = 4000 * 256;
  StudyTrialRow lost = trial("r1", "c256", -1);
  lost.outcome = std::string(trial_outcome::kStoppedByRace);
  lost.reason = "stopped_by_race at step 1151";
  store.write_study_trials({won, lost});
  StudyCellRow done = cell("c256", "s1", 256);
  done.status = std::string(cell_status::kReached);
  done.best_run_id = "r0";
  done.best_lr = 0.1;
  done.steps_to_target = 1150.5;
  done.samples_to_target = 1150.5 * 256;
  store.write_study_cells({done});

  const auto cells = store.read_study_cells("s1");
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(cells[0].cell_id, "c64");  // ordered by optimizer, then batch
  EXPECT_EQ(cells[1].cell_id, "c256");
  EXPECT_EQ(cells[1].status, "reached");
  EXPECT_EQ(cells[1].best_run_id, "r0");
  EXPECT_EQ(cells[1].steps_to_target, 1150.5);
  EXPECT_EQ(cells[1].samples_to_target, 1150.5 * 256);
  EXPECT_EQ(cells[1].cap_steps, 4000);
  EXPECT_EQ(cells[1].target.metric, "val_acc");
  EXPECT_DOUBLE_EQ(cells[1].target.value, 0.88);
  EXPECT_TRUE(cells[1].updated_at.has_value());
  EXPECT_EQ(cells[0].status, "searching");
  EXPECT_FALSE(cells[0].best_lr.has_value());

  const auto trials = store.read_study_trials("s1");
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_EQ(trials[0].run_id, "r1");  // lr_index -1 first
  EXPECT_EQ(trials[0].outcome, "stopped_by_race");
  EXPECT_EQ(trials[0].reason, "stopped_by_race at step 1151");
  EXPECT_DOUBLE_EQ(trials[0].base_lr, 0.05);
  EXPECT_EQ(trials[1].outcome, "reached");
  EXPECT_EQ(trials[1].samples_trained, 1200 * 256);
  EXPECT_EQ(trials[1].cap_samples, 4000 * 256);
  EXPECT_TRUE(trials[1].decided_at.has_value());
  EXPECT_EQ(store.read_study_trials().size(), 3u);
  EXPECT_EQ(store.read_study_cells().size(), 3u);

  RawDb db(path);
  EXPECT_EQ(db.integer("SELECT count(*) FROM study_trials WHERE cell_id = 'c256'"), 2);
  EXPECT_EQ(db.integer("SELECT count(*) FROM study_cells"), 3);
}

TEST(StudyTables, UnknownStatusOutcomeAndOrphanTrialAreRefused) {
  TempDir dir;
  Store store(dir.file("bad.db"));
  StudyCellRow bad = cell("c", "s", 64);
  bad.status = "finished";
  EXPECT_THROW(store.write_study_cells({bad}), StoreError);
  StudyTrialRow odd = trial("r", "c", 0);
  odd.outcome = "won";
  EXPECT_THROW(store.write_study_trials({odd}), StoreError);
  try {
    store.write_study_trials({trial("r", "no-such-cell", 0)});
    FAIL() << "a trial without its cell must be refused";
  } catch (const StoreError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("study trials"));
  }
}

TEST(StudyTables, StoppedIsAFinalRunStatus) {
  TempDir dir;
  Store store(dir.file("stopped.db"));
  RunRow run;
  run.run_id = "r1";
  run.status = "running";
  store.upsert_run(run);
  store.set_run_status("r1", run_status::kStopped, std::string("stopped_by_race at step 40"));
  const auto got = store.get_run("r1");
  EXPECT_EQ(got->status, "stopped");
  EXPECT_EQ(got->error, "stopped_by_race at step 40");
  EXPECT_TRUE(got->finished_at.has_value());
  EXPECT_TRUE(is_final_run_status("stopped"));
}

}  // namespace
}  // namespace batchlab::results
