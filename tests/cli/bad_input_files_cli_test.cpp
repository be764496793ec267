// Bad input through the real binary exits 2 with a message naming the file (or key) and the fix,
// and creates nothing: a file that is no batchlab database given to `results ingest`, `results
// migrate` or `train --db`, a damaged database given to `query` (and to the writing commands, with
// no -wal or -shm left beside it), and config values beyond their bounds (train.threads, a float
// beyond the range of doubles).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "results/store.h"
#include "tests/cli/cli_runner.h"
#include "tests/results/test_support.h"

namespace batchlab::cli {
namespace {

namespace fs = std::filesystem;
using testing::contains;
using testing::run_batchlab;
using testing::shell_quote;
using testing::TempDir;

size_t entries_in(const fs::path& folder) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::recursive_directory_iterator(folder)) ++n;
  return n;
}

TEST(BadInputFiles, IngestOfAFileThatIsNoRecordsFileExitsTwoAndCreatesNoDatabase) {
  TempDir dir("ingest-text");
  const std::string text = dir.file("notes.txt", "not a records file\n");
  const std::string db = (dir.path / "new.db").string();
  const auto r = run_batchlab("results ingest --db " + shell_quote(db) + " " + shell_quote(text));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, text + ": records file is not a batchlab records file"))
      << r.output;
  EXPECT_FALSE(fs::exists(db)) << r.output;

  // A folder without records files: nothing to fold, and no database made for it.
  fs::create_directories(dir.path / "empty_runs");
  const auto none = run_batchlab("results ingest --db " + shell_quote(db) + " " +
                                 shell_quote((dir.path / "empty_runs").string()));
  EXPECT_EQ(none.exit_code, 2) << none.output;
  EXPECT_TRUE(contains(none.output, "no records.db file there")) << none.output;
  EXPECT_FALSE(fs::exists(db)) << none.output;
  EXPECT_EQ(entries_in(dir.path), 2u);  // notes.txt and empty_runs
}

TEST(BadInputFiles, MigrateOfAFileThatIsNoDatabaseExitsTwo) {
  TempDir dir("migrate-junk");
  const std::string junk = dir.file("junk.db", "SQLite? no: just text that is long enough\n");
  const auto r = run_batchlab("results migrate --db " + shell_quote(junk));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, junk + ": --db is not a SQLite database")) << r.output;
  EXPECT_EQ(entries_in(dir.path), 1u) << r.output;
}

TEST(BadInputFiles, TrainWithADeviceOrAFolderAsItsDatabaseExitsTwoBeforeTraining) {
  TempDir dir("train-db");
  const std::string config = dir.file("tiny.toml", testing::kTinyConfig);
  const auto device = run_batchlab("train " + shell_quote(config) + " --db /dev/null");
  EXPECT_EQ(device.exit_code, 2) << device.output;
  EXPECT_TRUE(contains(device.output, "/dev/null: --db is not a regular file")) << device.output;
  EXPECT_FALSE(fs::exists("/dev/checkpoints")) << device.output;

  const auto folder = (dir.path / "dbdir").string();
  fs::create_directories(folder);
  const auto r = run_batchlab("train " + shell_quote(config) + " --db " + shell_quote(folder));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, folder + ": --db is a folder, not a database file")) << r.output;
  EXPECT_EQ(entries_in(dir.path), 2u) << r.output;  // tiny.toml and the empty dbdir
}

TEST(BadInputFiles, QueryOfACorruptDatabaseSaysSoNamingTheFile) {
  TempDir dir("corrupt");
  const std::string db = (dir.path / "sweep.db").string();
  {
    results::Store store(db);
    for (int r = 0; r < 40; ++r) {
      results::RunRow run;
      run.run_id = "run" + std::to_string(r);
      run.status = "planned";
      run.config_toml = std::string(500, 'x');
      store.upsert_run(run);
    }
  }
  results::testing::corrupt_all_but_first_page(db);
  const auto r = run_batchlab("query --db " + shell_quote(db) + " \"SELECT * FROM runs\"");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, db + ": the database file is corrupt or not a SQLite database"))
      << r.output;
  EXPECT_FALSE(contains(r.output, "invalid SQL")) << r.output;
}

// A damaged database given to a writing command is refused (exit 2) and nothing appears beside
// it: no -wal or -shm file from the check that found the damage (issue 35).
TEST(BadInputFiles, ACorruptDatabaseGetsNothingCreatedBesideIt) {
  TempDir dir("corrupt-writers");
  const std::string db = (dir.path / "sweep.db").string();
  {
    results::Store store(db);
    for (int r = 0; r < 40; ++r) {
      results::RunRow run;
      run.run_id = "run" + std::to_string(r);
      run.status = "planned";
      run.config_toml = std::string(500, 'x');
      store.upsert_run(run);
    }
  }
  results::testing::corrupt_all_but_first_page(db);
  const std::string bytes = testing::read_text(db);
  const std::string config = dir.file("tiny.toml", testing::kTinyConfig);
  fs::create_directories(dir.path / "runs");
  for (const std::string& command : {"train " + shell_quote(config) + " --db " + shell_quote(db),
                                     "results migrate --db " + shell_quote(db),
                                     "results ingest --db " + shell_quote(db) + " " +
                                         shell_quote((dir.path / "runs").string())}) {
    SCOPED_TRACE(command);
    const auto r = run_batchlab(command);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_TRUE(contains(r.output, db + ": the database file is corrupt")) << r.output;
    EXPECT_FALSE(fs::exists(db + "-wal")) << r.output;
    EXPECT_FALSE(fs::exists(db + "-shm")) << r.output;
    EXPECT_EQ(entries_in(dir.path), 3u) << r.output;  // sweep.db, tiny.toml, runs
    EXPECT_EQ(testing::read_text(db), bytes);
  }
}

TEST(BadInputFiles, ThreadsBeyondTheBoundAndFloatsBeyondDoublesExitTwoWithTheFix) {
  TempDir dir("limits");
  const std::string config = dir.file("tiny.toml", testing::kTinyConfig);
  const std::string db = (dir.path / "r.db").string();
  const auto threads = run_batchlab("train " + shell_quote(config) + " --db " + shell_quote(db) +
                                    " --set train.threads=100000");
  EXPECT_EQ(threads.exit_code, 2) << threads.output;
  EXPECT_TRUE(contains(threads.output, "--set: train.threads = 100000: must be <= 1024"))
      << threads.output;
  const auto lr = run_batchlab("train " + shell_quote(config) + " --db " + shell_quote(db) +
                               " --set optim.base_lr=1e400");
  EXPECT_EQ(lr.exit_code, 2) << lr.output;
  EXPECT_TRUE(contains(lr.output, "--set: optim.base_lr = 1e400: out of range for a float"))
      << lr.output;
  const std::string big =
      dir.file("big.toml", std::string(testing::kTinyConfig) + "seed = 9223372036854775808\n");
  const auto seed = run_batchlab("train " + shell_quote(big) + " --db " + shell_quote(db));
  EXPECT_EQ(seed.exit_code, 2) << seed.output;
  EXPECT_TRUE(contains(seed.output, big + ":20:8: train.seed = 9223372036854775808: out of range "
                                          "for an integer"))
      << seed.output;
  EXPECT_FALSE(fs::exists(db));
}

}  // namespace
}  // namespace batchlab::cli
