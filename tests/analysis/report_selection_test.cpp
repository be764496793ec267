// Best-LR selection in `batchlab report` uses validation metrics only: on a database written by
// hand (hand_db.h) where validation and test disagree, the report follows validation; a group
// without validation rows selects nothing and says why; selecting on a test or training metric is
// exit 2.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/analysis/hand_db.h"
#include "tests/cli/cli_runner.h"

namespace batchlab::analysis {
namespace {

using cli::testing::run_batchlab;
using cli::testing::shell_quote;
using cli::testing::TempDir;

// Group (sgd, 64): LR 0.1 is best on test (0.90) but worse on validation (0.70); LR 0.2 the other
// way round (test 0.60, validation 0.80, validation loss 0.5 against 0.9). Two seeds each.
// Group (sgd, 128): two LRs, no validation rows (a run without data.val_size).
void write_runs_db(const std::string& path) {
  testing::HandDb db(path);
  db.create_sweep_schema();
  struct Run {
    const char* id;
    int batch;
    double lr;
    int seed;
    double test_acc;
    const char* val_acc;
    const char* val_loss;
  };
  const Run runs[] = {
      {"a1", 64, 0.1, 0, 0.91, "0.71", "0.9"},   {"a2", 64, 0.1, 1, 0.89, "0.69", "0.9"},
      {"b1", 64, 0.2, 0, 0.61, "0.81", "0.5"},   {"b2", 64, 0.2, 1, 0.59, "0.79", "0.5"},
      {"c1", 128, 0.1, 0, 0.90, "NULL", "NULL"}, {"d1", 128, 0.2, 0, 0.50, "NULL", "NULL"},
  };
  for (const auto& r : runs) {
    db.exec(fmt::format(
        "INSERT INTO runs(run_id, status, optimizer, global_batch, base_lr, peak_lr, seed) "
        "VALUES('{}', 'done', 'sgd', {}, {}, {}, {})",
        r.id, r.batch, r.lr, r.lr, r.seed));
    // An early evaluation with the opposite validation ranking: selection reads the last one.
    db.exec(fmt::format(
        "INSERT INTO evals(run_id, step, test_acc, val_acc, val_loss) VALUES('{}', 5, 0.1, {}, "
        "{}), ('{}', 10, {}, {}, {})",
        r.id, std::string(r.val_acc) == "NULL" ? "NULL" : "0.99",
        std::string(r.val_loss) == "NULL" ? "NULL" : "0.01", r.id, r.test_acc, r.val_acc,
        r.val_loss));
  }
}

class ReportSelection : public ::testing::Test {
 protected:
  TempDir dir{"select"};
  std::string db = (dir.path / "runs.db").string();
  void SetUp() override { write_runs_db(db); }
  nlohmann::json report(const std::string& extra = "") {
    const auto r = run_batchlab("report --db " + shell_quote(db) + " --format json " + extra);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return nlohmann::json::parse(r.output);
  }
};

TEST_F(ReportSelection, TheBestLrIsChosenOnValidationNotTest) {
  for (const char* extra : {"", "--select-by val_acc", "--select-by val_loss"}) {
    SCOPED_TRACE(extra);
    const auto j = report(extra);
    ASSERT_EQ(j["rows"].size(), 2u);
    const auto& row = j["rows"][0];
    EXPECT_EQ(row["key"]["global_batch"], "64");
    EXPECT_DOUBLE_EQ(row["base_lr"].get<double>(), 0.2);
    // Test accuracy stays in the table as a reported value: that of the selected LR's runs.
    EXPECT_NEAR(row["final"]["mean"].get<double>(), 0.60, 1e-12);
    EXPECT_EQ(row["selection_note"], "");
  }
  EXPECT_EQ(report()["select_by"], "val_acc");
  EXPECT_NEAR(report()["rows"][0]["selection_metric"]["mean"].get<double>(), 0.80, 1e-12);
}

TEST_F(ReportSelection, AGroupWithoutValidationRowsSelectsNothingAndSaysWhy) {
  const auto j = report();
  const auto& row = j["rows"][1];
  EXPECT_EQ(row["key"]["global_batch"], "128");
  EXPECT_TRUE(row["base_lr"].is_null());
  EXPECT_EQ(row["final"]["n"], 0);  // never the test set's favourite instead
  EXPECT_EQ(row["selection_note"], "no LR selected: no val_acc");
  bool warned = false;
  for (const auto& w : j["warnings"]) {
    const std::string text = w;
    warned = warned || (text.find("global_batch=128: no LR selected") != std::string::npos &&
                        text.find("data.val_size") != std::string::npos);
  }
  EXPECT_TRUE(warned) << j["warnings"].dump();
  const auto table = run_batchlab("report --db " + shell_quote(db));
  EXPECT_NE(table.output.find("no LR selected: no val_acc"), std::string::npos) << table.output;
}

TEST_F(ReportSelection, SelectingOnATestOrTrainingMetricIsExit2) {
  for (const char* metric : {"test_acc", "test_loss", "train_acc", "train_loss"}) {
    const auto r = run_batchlab("report --db " + shell_quote(db) + " --select-by " + metric);
    EXPECT_EQ(r.exit_code, 2) << metric;
    EXPECT_NE(r.output.find("use a val_ metric"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("data.val_size"), std::string::npos) << r.output;
  }
  const auto r = run_batchlab("report --db " + shell_quote(db) + " --select-by top5");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--select-by top5"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace batchlab::analysis
