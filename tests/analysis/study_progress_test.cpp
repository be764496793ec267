// What `sweep status` reads of a study (analysis/study_progress.h): cells by status, trials by
// outcome, the undecided trials with their runs' progress, and the cell table, for one sweep of
// a database that holds two.
#include "analysis/study_progress.h"

#include <gtest/gtest.h>

#include "results/store.h"
#include "tests/temp_dir.h"

namespace batchlab::analysis {
namespace {

results::StudyCellRow cell(const std::string& id, const std::string& sweep, int64_t batch,
                           const std::string& status) {
  results::StudyCellRow c;
  c.cell_id = id;
  c.sweep_id = sweep;
  c.optimizer = "lamb";
  c.global_batch = batch;
  c.cell_toml = "";
  c.target.metric = "val_loss";
  c.target.value = 6.0;
  c.lr_center = 0.004;
  c.cap_steps = 300;
  c.status = status;
  if (status == "reached") {
    c.best_lr = 0.008;
    c.steps_to_target = 147.54;
  }
  return c;
}

results::StudyTrialRow trial(const std::string& run, const std::string& cell, int64_t k,
                             const std::string& outcome) {
  results::StudyTrialRow t;
  t.run_id = run;
  t.cell_id = cell;
  t.base_lr = 0.004 * (k >= 0 ? 1 << k : 1.0 / (1 << -k));
  t.lr_index = k;
  t.outcome = outcome;
  return t;
}

TEST(StudyProgress, ReadsOneSweepOfADatabase) {
  test_support::TempDir dir;
  const std::string db = dir / "study.db";
  {
    results::Store store(db);
    store.write_study_cells({cell("a", "s", 64, "reached"), cell("b", "s", 128, "searching"),
                             cell("c", "other", 64, "censored")});
    store.write_study_trials({trial("r1", "a", 0, "reached"), trial("r2", "a", 1, "pruned"),
                              trial("r3", "b", 0, "running"), trial("r4", "b", 1, "running"),
                              trial("r5", "c", 0, "capped")});
    results::RunRow run;
    run.run_id = "r3";
    run.status = "running";
    run.total_steps = 300;
    store.upsert_run(run);
    store.set_run_progress("r3", 41, std::nullopt);
  }
  const StudyProgress p = read_study_progress(db, "s");
  EXPECT_EQ(p.cell_status,
            (std::map<std::string, std::string>{{"a", "reached"}, {"b", "searching"}}));
  EXPECT_EQ(p.trial_outcomes,
            (std::map<std::string, int64_t>{{"pruned", 1}, {"reached", 1}, {"running", 2}}));
  ASSERT_EQ(p.undecided.size(), 2u);
  EXPECT_EQ(p.undecided[0].run_id, "r3");
  EXPECT_EQ(p.undecided[0].run_status, "running");
  EXPECT_EQ(p.undecided[0].last_step, 41);
  EXPECT_EQ(p.undecided[0].total_steps, 300);
  EXPECT_EQ(p.undecided[1].run_id, "r4");
  EXPECT_FALSE(p.undecided[1].run_status.has_value()) << "not started: no runs row yet";
  ASSERT_EQ(p.cells.size(), 2u);
  EXPECT_EQ(p.cells[0].global_batch, 64);
  EXPECT_EQ(p.cells[0].best_lr, 0.008);
  EXPECT_EQ(p.cells[0].steps_to_target, 147.54);
  EXPECT_EQ(p.cells[0].trials, 2);
  EXPECT_EQ(p.cells[1].status, "searching");
  EXPECT_FALSE(p.cells[1].best_lr.has_value());
  // No database yet: nothing, and no file made.
  EXPECT_TRUE(read_study_progress(dir / "none.db", "s").cells.empty());
  EXPECT_FALSE(std::filesystem::exists(dir / "none.db"));
}

}  // namespace
}  // namespace batchlab::analysis
