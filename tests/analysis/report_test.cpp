// `batchlab report` on a database from a real mini sweep (mini_sweep.h): every number checked
// against SQL written independently here, plus LR selection on the validation split, edge warnings
// and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "results/query.h"
#include "tests/analysis/hand_db.h"
#include "tests/analysis/mini_sweep.h"
#include "tests/cli/cli_runner.h"

namespace batchlab::analysis {
namespace {

using cli::testing::run_batchlab;
using cli::testing::shell_quote;

double sql_number(const std::string& db, const std::string& sql) {
  const auto r = results::query_readonly(db, sql);
  EXPECT_EQ(r.rows.size(), 1u) << sql;
  if (r.rows.empty() || !r.rows[0][0]) return std::nan("");
  return std::stod(*r.rows[0][0]);
}

nlohmann::json report_json(const std::string& db, const std::string& extra = "") {
  const auto r = run_batchlab("report --db " + shell_quote(db) + " --format json " + extra);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return nlohmann::json::parse(r.output);
}

// The final evaluation of each run, for the group's SQL below.
const char* kFinal =
    "evals e JOIN runs r ON r.run_id = e.run_id WHERE e.step = (SELECT max(step) FROM evals "
    "WHERE run_id = r.run_id) AND r.status = 'done'";

TEST(Report, GroupsMatchDirectSql) {
  const std::string db = testing::mini_sweep_db();
  const auto j = report_json(db);
  ASSERT_EQ(j["rows"].size(), 4u);  // 2 optimizers x 2 batches; the LR grid is folded
  EXPECT_EQ(j["total_runs"], testing::kMiniJobs);
  EXPECT_EQ(j["targets"].size(), 1u);
  EXPECT_EQ(j["targets"][0]["metric"], "test_acc");
  EXPECT_DOUBLE_EQ(j["targets"][0]["value"].get<double>(), 0.2);
  for (const auto& row : j["rows"]) {
    const std::string opt = row["key"]["optimizer"];
    const std::string batch = row["key"]["global_batch"];
    const std::string group = "r.optimizer = '" + opt + "' AND r.global_batch = " + batch;
    SCOPED_TRACE(group);
    EXPECT_EQ(row["runs"].get<double>(),
              sql_number(db, "SELECT count(*) FROM runs r WHERE " + group));
    EXPECT_EQ(row["seeds"], 2);
    EXPECT_EQ(row["lr_grid"], 2);
    // The selected LR is the one with the best mean final validation accuracy (the smaller LR on
    // a tie); the test accuracy is only reported.
    const auto best = results::query_readonly(
        db, std::string("SELECT r.base_lr, avg(e.val_acc) AS m FROM ") + kFinal + " AND " + group +
                " GROUP BY r.base_lr ORDER BY m DESC, r.base_lr LIMIT 1");
    ASSERT_EQ(best.rows.size(), 1u);
    const double lr = std::stod(*best.rows[0][0]);
    EXPECT_DOUBLE_EQ(row["base_lr"].get<double>(), lr);
    const std::string sel = group + " AND r.base_lr = " + *best.rows[0][0];
    EXPECT_NEAR(row["selection_metric"]["mean"].get<double>(), std::stod(*best.rows[0][1]), 1e-12);
    EXPECT_NEAR(
        row["final"]["mean"].get<double>(),
        sql_number(db, std::string("SELECT avg(e.test_acc) FROM ") + kFinal + " AND " + sel),
        1e-12);
    EXPECT_EQ(row["final"]["n"], 2);
    // Sample standard deviation over the two seeds: |a - b| / sqrt(2).
    const double spread = sql_number(
        db, std::string("SELECT max(e.test_acc) - min(e.test_acc) FROM ") + kFinal + " AND " + sel);
    EXPECT_NEAR(row["final"]["sd"].get<double>(), spread / std::sqrt(2.0), 1e-12);
    EXPECT_NEAR(row["best"]["mean"].get<double>(),
                sql_number(db,
                           "SELECT avg(b) FROM (SELECT max(e.test_acc) AS b FROM evals e JOIN "
                           "runs r ON r.run_id = e.run_id WHERE " +
                               sel + " GROUP BY r.run_id)"),
                1e-12);
    EXPECT_NEAR(row["gap_acc"]["mean"].get<double>(),
                sql_number(db, std::string("SELECT avg(e.gap_acc) FROM ") + kFinal + " AND " + sel),
                1e-12);
    EXPECT_NEAR(
        row["gap_loss"]["mean"].get<double>(),
        sql_number(db, std::string("SELECT avg(e.gap_loss) FROM ") + kFinal + " AND " + sel),
        1e-12);
    EXPECT_NEAR(row["peak_lr"].get<double>(),
                sql_number(db, "SELECT avg(peak_lr) FROM runs r WHERE " + sel), 1e-12);
    EXPECT_EQ(row["diverged"].get<double>(),
              sql_number(db, "SELECT count(*) FROM runs r WHERE status = 'diverged' AND " + group));
    // Time to the target over the selected LR's runs that reached it.
    const auto& t = row["targets"][0];
    const std::string reached =
        "FROM milestones m JOIN runs r ON r.run_id = m.run_id WHERE " + sel +
        " AND r.status = 'done' AND m.metric = 'test_acc' AND m.target = 0.2";
    EXPECT_EQ(t["reached"].get<double>(), sql_number(db, "SELECT count(*) " + reached));
    if (t["reached"].get<int>() > 0) {
      EXPECT_NEAR(t["steps"]["mean"].get<double>(), sql_number(db, "SELECT avg(m.step) " + reached),
                  1e-9);
      EXPECT_NEAR(t["samples"]["mean"].get<double>(),
                  sql_number(db, "SELECT avg(m.samples) " + reached), 1e-9);
      EXPECT_NEAR(t["train_s"]["mean"].get<double>(),
                  sql_number(db, "SELECT avg(m.wall_s) " + reached), 1e-9);
      EXPECT_NEAR(t["gap_acc"]["mean"].get<double>(),
                  sql_number(db,
                             "SELECT avg(e.gap_acc) FROM milestones m JOIN runs r ON "
                             "r.run_id = m.run_id JOIN evals e ON e.run_id = m.run_id AND "
                             "e.step = m.step WHERE " +
                                 sel + " AND r.status = 'done' AND m.target = 0.2"),
                  1e-9);
    }
  }
}

TEST(Report, BestLrAtTheGridEdgeIsFlagged) {
  // With two LRs the best is always at an edge: every group is flagged and warned about.
  const auto j = report_json(testing::mini_sweep_db());
  EXPECT_EQ(j["warnings"].size(), j["rows"].size());
  for (const auto& row : j["rows"]) {
    const double lr = row["base_lr"];
    EXPECT_EQ(row["lr_edge"], lr == 0.01 ? "low" : "high");
  }
  // Grouping by the LR too leaves one LR per group: nothing to select, nothing to warn about.
  const auto by_lr =
      report_json(testing::mini_sweep_db(), "--group-by optimizer,global_batch,base_lr");
  EXPECT_EQ(by_lr["rows"].size(), 8u);
  EXPECT_TRUE(by_lr["warnings"].empty());
}

TEST(Report, WhereAndConfigKeysAndConstantsHidden) {
  const std::string db = testing::mini_sweep_db();
  const auto j = report_json(db, "--where " + shell_quote("r.optimizer = 'lamb'") +
                                     " --group-by optimizer,optim.name,batch.global");
  EXPECT_EQ(j["total_runs"], 8);
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_EQ(j["rows"][0]["key"]["batch.global"], "64");
  EXPECT_EQ(j["rows"][1]["key"]["batch.global"], "128");  // numeric order, not text order
  EXPECT_EQ(j["constants"]["optimizer"], "lamb");
  EXPECT_EQ(j["constants"]["model"], "small_resnet");
  // The table hides the constant keys as columns and names them once above.
  const auto t = run_batchlab("report --db " + shell_quote(db) + " --where " +
                              shell_quote("r.optimizer = 'lamb'"));
  ASSERT_EQ(t.exit_code, 0) << t.output;
  EXPECT_NE(t.output.find("constant: optimizer=lamb"), std::string::npos) << t.output;
  EXPECT_EQ(t.output.find("optimizer  "), std::string::npos) << t.output;
  EXPECT_NE(t.output.find("global_batch"), std::string::npos);
  EXPECT_NE(t.output.find("warning: "), std::string::npos);
}

TEST(Report, FormatsHaveOneRowPerGroup) {
  const std::string db = testing::mini_sweep_db();
  const auto csv = run_batchlab("report --db " + shell_quote(db) + " --format csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.output;
  EXPECT_EQ(std::count(csv.output.begin(), csv.output.end(), '\n'), 5);  // header + 4 groups
  EXPECT_EQ(
      csv.output.rfind("optimizer,global_batch,runs,seeds,base_lr,lr_grid,peak_lr,test_acc,", 0),
      0u)
      << csv.output;
  const auto md = run_batchlab("report --db " + shell_quote(db) + " --format markdown");
  ASSERT_EQ(md.exit_code, 0) << md.output;
  EXPECT_NE(md.output.find("| optimizer | global_batch |"), std::string::npos) << md.output;
  EXPECT_NE(md.output.find("| --- | ---: |"), std::string::npos) << md.output;
}

// A value a group does not have (the standard deviation of one seed, steps to a target never
// reached) is an empty cell in every rendering: the table no longer prints SQL's NULL (issue 35).
TEST(Report, AbsentValuesAreEmptyCellsInTheTableToo) {
  const std::string study =
      std::string(test_paths::source_dir()) + "/docs/data/fmnist_scaling_study.db";
  const std::string one_seed = " --where " + shell_quote("r.seed = 0");
  for (const std::string& args :
       {"report --runs --db " + shell_quote(study), "report --db " + shell_quote(study),
        "report --db " + shell_quote(testing::mini_sweep_db()) + one_seed}) {
    SCOPED_TRACE(args);
    const auto r = run_batchlab(args);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output.find("NULL"), std::string::npos) << r.output;
  }
  // The one-seed rows: test_acc_sd is blank, and the next column's value follows the mean.
  const auto r = run_batchlab("report --db " + shell_quote(testing::mini_sweep_db()) + one_seed);
  const auto header = r.output.find("test_acc_sd");
  ASSERT_NE(header, std::string::npos) << r.output;
  const auto rule = r.output.find('\n', r.output.find('\n', header) + 1);
  const std::string first_row = r.output.substr(rule + 1, r.output.find('\n', rule + 1) - rule - 1);
  const auto column = header - r.output.rfind('\n', header) - 1;
  ASSERT_GT(first_row.size(), column + 11) << r.output;
  EXPECT_EQ(first_row.substr(column, 11), std::string(11, ' ')) << r.output;
}

// Every run records the accuracy of guessing (runs.chance_acc: 1 / 10 classes of the synthetic
// task), and a group whose selected runs end at or below it says so in its note.
TEST(Report, RunsAtOrBelowChanceAccuracyAreNoted) {
  const std::string source = testing::mini_sweep_db();
  EXPECT_EQ(sql_number(source, "SELECT count(*) FROM runs WHERE abs(chance_acc - 0.1) > 1e-12"),
            0.0);
  EXPECT_GT(sql_number(source, "SELECT count(*) FROM runs WHERE chance_acc = 0.1"), 0.0);
  cli::testing::TempDir tmp;
  const std::string db = tmp.file("chance.db");
  std::filesystem::copy_file(source, db);
  // A chance level above every accuracy for one group: all its runs end "at or below" it.
  testing::HandDb(db).exec(
      "UPDATE runs SET chance_acc = 1.0 WHERE optimizer = 'sgd' AND global_batch = 64");
  const auto j = report_json(db, "--group-by optimizer,global_batch");
  int noted = 0;
  for (const auto& row : j["rows"]) {
    const bool chosen = row["key"]["optimizer"] == "sgd" && row["key"]["global_batch"] == "64";
    EXPECT_EQ(row["at_chance"].get<int>() > 0, chosen) << row.dump();
    if (chosen) {
      ++noted;
      EXPECT_EQ(row["at_chance"].get<int>(), row["final"]["n"].get<int>());
    }
  }
  EXPECT_EQ(noted, 1);
  const auto table =
      run_batchlab("report --db " + shell_quote(db) + " --group-by optimizer,global_batch");
  EXPECT_NE(table.output.find("at or below chance (100.0% test accuracy)"), std::string::npos)
      << table.output;
}

TEST(Report, BadInputIsExit2WithTheFix) {
  const std::string db = testing::mini_sweep_db();
  auto r = run_batchlab("report --db " + shell_quote(db) + " --group-by optimzer");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--group-by optimzer: not a column of the runs table"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("optimizer"), std::string::npos);
  r = run_batchlab("report --db " + shell_quote(db) + " --where " + shell_quote("r.nope = 1"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("no such column: r.nope"), std::string::npos) << r.output;
  r = run_batchlab("report --db /nonexistent/x.db");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("/nonexistent/x.db"), std::string::npos) << r.output;
  r = run_batchlab("report --db " + shell_quote(db) + " --format xml");
  EXPECT_EQ(r.exit_code, 2);
  r = run_batchlab("report --db " + shell_quote(db) + " --metric top5");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--metric top5"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace batchlab::analysis
