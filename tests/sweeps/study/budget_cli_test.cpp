// `batchlab sweep plan|run|status`, `report`, `compare` and `plot` on a fixed-budget search
// ([search]) through the real binary: a promoted point resumes its run from the checkpoint it
// stopped at (one series, no step twice), the cells and points are recorded, and the report and
// comparison read them back. The decisions themselves are tested in budget_decisions_test.cpp and
// over a fake source in budget_engine_test.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/sweeps/sweep_cli_util.h"

namespace batchlab::sweeps {
namespace budget_cli_test {

using testing::SweepDir;

// 512 synthetic samples less 128 for validation: 384; batch 64 -> 6 steps an epoch, 12 in 2
// epochs (rungs 6, 12); batch 32 -> 24 steps (rungs 12, 24). Two rates a line, two lines.
std::string search_body(const std::string& extra = "") {
  return "seeds = [0, 1]\n[set]\n\"data.val_size\" = 128\n\"data.test_size\" = 128\n"
         "[grid]\n\"optim.name\" = [\"sgd\", \"nesterov\"]\n\"batch.global\" = [32, 64]\n"
         "[search]\nrungs = 2\nlr_points = 2\n" +
         extra;
}

TEST(BudgetSearchCli, APromotedPointResumesItsRunAndTheReportReadsTheSearchBack) {
  SweepDir s("budgetcli", search_body());
  auto plan = s.sweep("plan");
  ASSERT_EQ(plan.exit_code, 0) << plan.output;
  EXPECT_NE(plan.output.find("8 cells; successive halving on val_loss (eta 2)"), std::string::npos)
      << plan.output;
  EXPECT_NE(plan.output.find("6,12"), std::string::npos) << plan.output;

  auto run = s.sweep("run --workers 2");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("8 cells: 8 done, 0 failed, 0 still searching"), std::string::npos)
      << run.output;
  EXPECT_EQ(s.value("SELECT COUNT(*) FROM budget_cells WHERE status = 'done'"), "8");
  // Batch 64, seed 0, sgd: two points to step 6, the better one on to 12 in the same run.
  const std::string cell =
      "FROM budget_cells WHERE optimizer = 'sgd' AND global_batch = 64 AND seed = 0";
  const std::string best = s.value("SELECT best_run_id " + cell);
  EXPECT_EQ(s.value("SELECT rung_steps " + cell), "6,12");
  EXPECT_EQ(s.value("SELECT status || ' ' || attempts || ' ' || last_step FROM runs WHERE run_id "
                    "= '" +
                    best + "'"),
            "done 2 12");
  // One series: every step once, evaluations at both rungs.
  EXPECT_EQ(s.value("SELECT COUNT(*) || ' ' || COUNT(DISTINCT step) || ' ' || MAX(step) FROM "
                    "steps WHERE run_id = '" +
                    best + "'"),
            "12 12 11");
  EXPECT_EQ(s.value("SELECT group_concat(step) FROM (SELECT step FROM evals WHERE run_id = '" +
                    best + "' ORDER BY step)"),
            "6,12");
  // The other point stopped at the first rung, kept as halted.
  EXPECT_EQ(s.value("SELECT r.status || ' ' || r.stop_reason || ' ' || r.last_step || ' ' || "
                    "t.outcome FROM budget_trials t JOIN runs r ON r.run_id = t.run_id WHERE "
                    "t.cell_id = (SELECT cell_id " +
                    cell + ") AND t.run_id != '" + best + "'"),
            "stopped rung 6 halted");
  // The later seed reran the best point once, for the whole budget.
  EXPECT_EQ(s.value("SELECT trials || ' ' || samples_trained FROM budget_cells WHERE optimizer = "
                    "'sgd' AND global_batch = 64 AND seed = 1"),
            "1 768");

  // Run again: nothing is left to train.
  auto again = s.sweep("run --workers 2");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("0 trial starts now"), std::string::npos) << again.output;

  auto status = s.sweep("status");
  ASSERT_EQ(status.exit_code, 0) << status.output;
  EXPECT_NE(status.output.find("8 done"), std::string::npos) << status.output;

  auto report = testing::run_batchlab("report --db " + testing::shell_quote(s.db));
  ASSERT_EQ(report.exit_code, 0) << report.output;
  EXPECT_NE(report.output.find("fixed-budget search"), std::string::npos) << report.output;
  EXPECT_NE(report.output.find("range"), std::string::npos) << report.output;  // 2 seeds: no 95%
  auto json = testing::run_batchlab("report --format json --db " + testing::shell_quote(s.db));
  ASSERT_EQ(json.exit_code, 0) << json.output;
  const auto parsed = nlohmann::json::parse(json.output);
  ASSERT_EQ(parsed["series"].size(), 2u);
  const auto& batch = parsed["series"][0]["batches"][0];
  EXPECT_EQ(batch["seeds"].size(), 2u);
  EXPECT_FALSE(batch["test_loss"]["is_95"].get<bool>());
  EXPECT_EQ(batch["knobs"][0]["key"], "optim.base_lr");

  auto compare =
      testing::run_batchlab("compare --db " + testing::shell_quote(s.db) + " sgd nesterov");
  ASSERT_EQ(compare.exit_code, 0) << compare.output;
  EXPECT_NE(compare.output.find("Holm over"), std::string::npos) << compare.output;
  // Every batch of sgd against nesterov's best batch (chosen on validation loss), or at batch 32;
  // a batch nesterov lacks and a value that is no batch are exit 2 naming the value.
  const std::string db = testing::shell_quote(s.db);
  const auto expect_b_batch = [&](const std::string& value, int exit_code,
                                  const std::string& says) {
    const auto r =
        testing::run_batchlab("compare --b-batch " + value + " --db " + db + " sgd nesterov");
    EXPECT_EQ(r.exit_code, exit_code) << r.output;
    EXPECT_NE(r.output.find(says), std::string::npos) << r.output;
  };
  expect_b_batch("best", 0, "at one batch of B: nesterov's best batch on held-out data");
  expect_b_batch("32", 0, "nesterov at batch 32 against every batch of A");
  expect_b_batch("48", 2, "--b-batch 48: nesterov has no cell at that batch; it has 32, 64");
  expect_b_batch("1e3", 2, "--b-batch 1e3: not a batch");
  auto unknown = testing::run_batchlab("compare --db " + testing::shell_quote(s.db) + " sgd lamb");
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_NE(unknown.output.find("lamb: not a series"), std::string::npos) << unknown.output;
}

TEST(BudgetSearchCli, SpecErrorsExitTwoBeforeAnythingRunsAndSlurmIsRefused) {
  SweepDir s("budgetbad", search_body("lr_pionts = 3\n[search.knobs]\n\"optim.base_lr\" = [1]\n"));
  auto plan = s.sweep("plan");
  EXPECT_EQ(plan.exit_code, 2) << plan.output;
  EXPECT_NE(plan.output.find("did you mean search.lr_points?"), std::string::npos) << plan.output;
  EXPECT_NE(plan.output.find("the search tries the rates itself"), std::string::npos)
      << plan.output;
  auto run = s.sweep("run");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_FALSE(std::filesystem::exists(s.db)) << "an invalid search must not start";

  SweepDir ok("budgetslurm", search_body());
  auto submit = testing::run_batchlab("sweep submit " + testing::shell_quote(ok.spec) +
                                      " --slurm --dry-run --partition p");
  EXPECT_EQ(submit.exit_code, 2) << submit.output;
  EXPECT_NE(submit.output.find("runs its coordinator locally"), std::string::npos) << submit.output;
}

}  // namespace budget_cli_test
}  // namespace batchlab::sweeps
