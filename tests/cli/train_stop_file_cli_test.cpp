// `batchlab train --stop-file` (contract C2) end to end, with a validation split and
// full_eval = "final" as studies run it; and what train says about --run-id.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/cli/cli_runner.h"

namespace batchlab::cli {
namespace {

using testing::run_batchlab;
using testing::shell_quote;
using testing::TempDir;

TEST(TrainStopFileCli, AStopRequestEndsTheRunAsStoppedWithExitZero) {
  TempDir dir("stopfile");
  const auto cfg = dir.file("tiny.toml", testing::kTinyConfig);  // 16 steps
  const auto db = (dir.path / "stop.db").string();
  const auto stop = dir.file("stop", "cancelled 3\n");
  // Evaluations after 1, 2, 4, 8, 16 updates: the one after 4 is the first at or past 3.
  auto r = run_batchlab("train " + shell_quote(cfg) +
                        " --set train.evals_per_octave=1 --set train.full_eval=final"
                        " --set data.val_size=128 --stop-file " +
                        shell_quote(stop) + " --db " + shell_quote(db));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto run = run_batchlab("query --db " + shell_quote(db) +
                          " --format csv \"SELECT status, error, stop_reason FROM runs\"");
  // The reason as a value (runs.stop_reason), and the sentence for people (runs.error).
  EXPECT_NE(run.output.find("stopped,cancelled at step 4,cancelled"), std::string::npos)
      << run.output;
  // Validation at every evaluation; the test split only at the last one.
  auto evals =
      run_batchlab("query --db " + shell_quote(db) +
                   " --format csv \"SELECT group_concat(step || ':' || (val_acc IS NOT NULL) || "
                   "(test_acc IS NOT NULL), ' ') AS e FROM (SELECT * FROM evals ORDER BY step)\"");
  EXPECT_NE(evals.output.find("1:10 2:10 4:11"), std::string::npos) << evals.output;
}

TEST(TrainStopFileCli, RunIdIsExplainedAsACheckInTheErrorAndTheHelp) {
  TempDir dir("runidhelp");
  const auto cfg = dir.file("tiny.toml", testing::kTinyConfig);
  auto wrong = run_batchlab("train " + shell_quote(cfg) + " --run-id my-first-run --db " +
                            shell_quote((dir.path / "x.db").string()));
  EXPECT_EQ(wrong.exit_code, 2) << wrong.output;
  EXPECT_NE(wrong.output.find("SHA-256 of the canonical config"), std::string::npos)
      << wrong.output;
  EXPECT_NE(wrong.output.find("Drop --run-id"), std::string::npos) << wrong.output;
  EXPECT_NE(wrong.output.find("sweep plan"), std::string::npos) << wrong.output;
  auto help = run_batchlab("train --help");
  EXPECT_EQ(help.exit_code, 0) << help.output;
  EXPECT_NE(help.output.find("a check, not a name"), std::string::npos) << help.output;
  EXPECT_NE(help.output.find("--stop-file"), std::string::npos) << help.output;
}

}  // namespace
}  // namespace batchlab::cli
