// The committed batch-ladder study (sweeps/specs/fmnist_ladder_study.toml) run end to end through
// the binary on the real Fashion-MNIST (slow: minutes on 2 cores): the ladder opens batches from
// its start one doubling at a time, stops by its rule, never opens a batch above the stop, and
// `batchlab report` says why, the same reason the rule gives over the stored cells.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "results/batch_ladder.h"
#include "sweeps/spec.h"
#include "sweeps/study/ladder.h"
#include "tests/cli/cli_runner.h"
#include "tests/test_paths.h"

namespace batchlab::sweeps {
namespace {

using cli::testing::contains;
using cli::testing::query_csv;
using cli::testing::run_batchlab;
using cli::testing::shell_quote;
using cli::testing::TempDir;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void replace_line(std::string& text, const std::string& starts_with, const std::string& line) {
  const auto at = text.find(starts_with);
  ASSERT_NE(at, std::string::npos) << starts_with;
  text.replace(at, text.find('\n', at) - at, line);
}

TEST(StudyLadderFashionMnist, TheLadderExtendsItselfStopsByTheRuleAndTheReportSaysWhy) {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "Fashion-MNIST is not installed (Debian's dataset-fashion-mnist)";
  }
  const std::string root = test_paths::source_dir();
  TempDir dir("ladder_fmnist");
  const std::string db = (dir.path / "ladder.db").string();
  // The committed spec, with its base experiment's absolute path and the database in the scratch
  // folder.
  std::string spec = read_text(root + "/sweeps/specs/fmnist_ladder_study.toml");
  replace_line(spec, "experiment = ",
               "experiment = \"" + root + "/experiments/configs/fmnist_ladder.toml\"");
  replace_line(spec, "results = ", "results = \"" + db + "\"");
  const std::string path = dir.file("fmnist_ladder_study.toml", spec);

  const auto t0 = std::chrono::steady_clock::now();
  const auto run = run_batchlab("sweep run " + shell_quote(path) + " --workers 2");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::cout << "fmnist ladder study: " << seconds << " s\n";

  // The opened cells: a run of doublings from the start, every one with its answer.
  std::vector<results::LadderRung> rungs;
  std::istringstream cells(query_csv(
      db, "SELECT global_batch, status, steps_to_target FROM study_cells ORDER BY global_batch"));
  std::string line;
  std::getline(cells, line);
  while (std::getline(cells, line)) {
    std::istringstream fields(line);
    std::string batch, status, steps;
    std::getline(fields, batch, ',');
    std::getline(fields, status, ',');
    std::getline(fields, steps, ',');
    ASSERT_NE(status, "searching") << line;
    rungs.push_back({std::stoll(batch),
                     {status == "reached" ? std::optional(std::stod(steps)) : std::nullopt}});
  }
  ASSERT_GE(rungs.size(), 2u) << "the ladder extended itself at least once";
  for (size_t i = 0; i < rungs.size(); ++i) EXPECT_EQ(rungs[i].batch, int64_t{64} << i);

  // The rule over the stored cells stops exactly at the last opened batch.
  const auto parsed = parse_sweep_spec(spec, path);  // the committed spec's own ladder keys
  ASSERT_TRUE(parsed.study && parsed.study->ladder) << spec;
  const auto rule = std::optional(study::ladder_rule(*parsed.study));
  const auto verdict = results::walk_ladder(rungs, *rule);
  ASSERT_NE(verdict.stop, results::LadderStop::none) << "the study ended without a stop";
  EXPECT_EQ(verdict.rungs, rungs.size()) << "a batch above the stop was opened";

  const auto report = run_batchlab("report --db " + shell_quote(db));
  ASSERT_EQ(report.exit_code, 0) << report.output;
  std::cout << report.output;
  const std::string expected = "stopped: " + results::describe_ladder_stop(verdict, rungs, *rule);
  EXPECT_TRUE(contains(report.output, expected)) << expected << "\n" << report.output;
}

}  // namespace
}  // namespace batchlab::sweeps
