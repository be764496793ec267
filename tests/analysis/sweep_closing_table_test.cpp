// The table a finished sweep ends with (cli/sweep_report.h, printed by `sweep run` and `sweep
// status`) notes a group whose runs learned nothing, as the run report does (issue 45, point 5:
// the quickstart's SGD at batch 8192 ended at 2.2% test accuracy, below the 10% of guessing, with
// an empty note).
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "tests/analysis/hand_db.h"
#include "tests/analysis/mini_sweep.h"
#include "tests/cli/cli_runner.h"

namespace batchlab::analysis {
namespace {

using cli::testing::run_batchlab;
using cli::testing::shell_quote;

// The line of the closing table that starts with `optimizer` and `batch`, "" when none does.
std::string table_line(const std::string& output, const std::string& optimizer,
                       const std::string& batch) {
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string first, second;
    words >> first >> second;
    if (first == optimizer && second == batch) return line;
  }
  return "";
}

TEST(SweepClosingTable, RunsAtOrBelowChanceAccuracyAreNoted) {
  const std::string source = testing::mini_sweep_db();
  cli::testing::TempDir tmp;
  const std::string db = tmp.file("mini.db");
  std::filesystem::copy_file(source, db);
  // A chance level above every accuracy for one group: all its runs end "at or below" it.
  testing::HandDb(db).exec(
      "UPDATE runs SET chance_acc = 1.0 WHERE optimizer = 'sgd' AND global_batch = 64");
  tmp.file("base.toml", cli::testing::kTinyConfig);
  tmp.file("spec.toml",
           "schema_version = 1\n[sweep]\nname = \"mini\"\nexperiment = "
           "\"base.toml\"\nresults = \"" +
               db + "\"\n" + testing::kMiniSpecBody);
  const auto r = run_batchlab("sweep status " + shell_quote(tmp.file("spec.toml")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_NE(r.output.find("Results of sweep mini"), std::string::npos) << r.output;
  const std::string sgd64 = table_line(r.output, "sgd", "64");
  ASSERT_FALSE(sgd64.empty()) << r.output;
  EXPECT_NE(sgd64.find("at or below chance (100.0% test accuracy)"), std::string::npos) << r.output;
  const std::string lamb64 = table_line(r.output, "lamb", "64");
  ASSERT_FALSE(lamb64.empty()) << r.output;
  EXPECT_EQ(lamb64.find("chance"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace batchlab::analysis
