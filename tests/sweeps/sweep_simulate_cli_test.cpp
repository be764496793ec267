// `batchlab sweep simulate --from DB` given what a user may give it (issue 32, defects 7 and 8): a
// WAL-mode database whose latest rows are still in its -wal file (read consistently, not by a plain
// copy of the main file), a database holding none of the study's trials (refused, exit 2, instead
// of a table of -nan), and a file that is no database (named as given, not as an internal copy).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <string>

#include "results/sqlite_util.h"
#include "tests/cli/cli_runner.h"
#include "tests/temp_dir.h"
#include "tests/test_paths.h"

namespace batchlab::sweeps {
namespace {

namespace fs = std::filesystem;
using cli::testing::contains;
using cli::testing::run_batchlab;
using cli::testing::shell_quote;

std::string simulate_image_spec() {
  return std::string(test_paths::source_dir()) + "/sweeps/specs/fmnist_scaling_study.toml";
}
std::string simulate_image_db() {
  return std::string(test_paths::source_dir()) + "/docs/data/fmnist_scaling_study.db";
}

TEST(SweepSimulateCli, AWalDatabaseIsReadWithTheRowsStillInItsWalFile) {
  test_support::TempDir dir("simwal");
  const fs::path db = dir.path / "live.db";
  fs::copy_file(simulate_image_db(), db);
  {
    results::Connection rollback(db.string(), SQLITE_OPEN_READWRITE);
    rollback.exec("DELETE FROM study_trials; DELETE FROM study_cells", "test");
  }
  // A writer that keeps the file open in WAL mode with its rows not yet checkpointed: the main
  // file holds no trials, the -wal all of them (a study whose coordinator is still running).
  results::Connection writer(db.string(), SQLITE_OPEN_READWRITE);
  writer.exec("PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0", "test");
  writer.exec("ATTACH " + shell_quote(simulate_image_db()) +
                  " AS src; INSERT INTO study_cells SELECT * FROM src.study_cells; "
                  "INSERT INTO study_trials SELECT * FROM src.study_trials; DETACH src",
              "test");
  ASSERT_TRUE(fs::exists(db.string() + "-wal"));
  auto r = run_batchlab("sweep simulate " + shell_quote(simulate_image_spec()) + " --from " +
                        shell_quote(db.string()) + " --workers 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "85 / 85")) << "every recorded trial replayed: " << r.output;
  EXPECT_FALSE(contains(r.output, "nan")) << r.output;
}

TEST(SweepSimulateCli, ADatabaseWithNoneOfTheStudysTrialsIsRefused) {
  const std::string other =
      std::string(test_paths::source_dir()) + "/docs/data/bert_scaling_study.db";
  auto r = run_batchlab("sweep simulate " + shell_quote(simulate_image_spec()) + " --from " +
                        shell_quote(other));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--from " + other + ": holds none of study")) << r.output;
  EXPECT_FALSE(contains(r.output, "nan")) << r.output;
}

TEST(SweepSimulateCli, AFileThatIsNoDatabaseIsNamedAsGiven) {
  auto r =
      run_batchlab("sweep simulate " + shell_quote(simulate_image_spec()) + " --from /etc/passwd");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--from /etc/passwd: not a batchlab database")) << r.output;
  EXPECT_FALSE(contains(r.output, "recorded.db")) << "an internal copy named: " << r.output;
}

}  // namespace
}  // namespace batchlab::sweeps
