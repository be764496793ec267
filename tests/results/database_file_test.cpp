// Database paths checked before anything is created (results/database_file.h), and a damaged
// database reported as damaged, naming the file, rather than as "invalid SQL".
#include "results/database_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "results/errors.h"
#include "results/query.h"
#include "results/store.h"
#include "tests/results/test_support.h"

namespace batchlab::results {
namespace {

namespace fs = std::filesystem;
using testing::RawDb;
using testing::TempDir;

// The message of the StoreInputError `fn` throws ("" and a test failure when it throws none).
template <class Fn>
std::string input_error(Fn fn) {
  try {
    fn();
  } catch (const StoreInputError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected a StoreInputError, got: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected a StoreInputError";
  return "";
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

size_t entries_in(const std::string& folder) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(folder)) ++n;
  return n;
}

// A batchlab database with some runs and steps, closed (its WAL folded in and removed).
void make_database(const std::string& path) {
  Store store(path);
  for (int r = 0; r < 40; ++r) {
    RunRow run;
    run.run_id = "run" + std::to_string(r);
    run.status = "planned";
    run.config_toml = std::string(500, 'x');
    store.upsert_run(run);
  }
}

TEST(DatabaseFile, RefusesWhatCannotHoldADatabaseAndCreatesNothing) {
  TempDir dir;
  const std::string folder = dir.file("folder");
  fs::create_directories(folder);
  auto m = input_error([&] { check_database_path(folder, DatabaseUse::kCreateOrOpen, "--db"); });
  EXPECT_TRUE(contains(m, folder + ": --db is a folder, not a database file")) << m;
  EXPECT_EQ(entries_in(folder), 0u);

  m = input_error([&] { check_database_path("/dev/null", DatabaseUse::kCreateOrOpen, "--db"); });
  EXPECT_TRUE(contains(m, "/dev/null: --db is not a regular file")) << m;

  const std::string text = dir.file("notes.txt");
  write_text(text, "these are my notes, not a database\n");
  m = input_error([&] { check_database_path(text, DatabaseUse::kExisting, "--db"); });
  EXPECT_TRUE(contains(m, text + ": --db is not a SQLite database")) << m;
  m = input_error([&] { check_database_path(text, DatabaseUse::kRecords, "records file"); });
  EXPECT_TRUE(contains(m, "records file is not a batchlab records file")) << m;

  const std::string foreign = dir.file("other.db");
  {
    RawDb db(foreign);
    db.exec("CREATE TABLE notes(x)");
  }
  m = input_error([&] { check_database_path(foreign, DatabaseUse::kCreateOrOpen, "--db"); });
  EXPECT_TRUE(contains(m, "is a SQLite database of another program")) << m;
  EXPECT_TRUE(contains(m, "tables: notes")) << m;

  m = input_error(
      [&] { check_database_path(text + "/new.db", DatabaseUse::kCreateOrOpen, "--db"); });
  EXPECT_TRUE(contains(m, "is not a folder")) << m;
  m = input_error(
      [&] { check_database_path(dir.file("none.db"), DatabaseUse::kExisting, "--db"); });
  EXPECT_TRUE(contains(m, "does not exist")) << m;
  EXPECT_EQ(entries_in(dir.file("")), 3u);  // folder, notes.txt, other.db: nothing was made
}

TEST(DatabaseFile, AcceptsBatchlabDatabasesEmptyFilesAndNewPaths) {
  TempDir dir;
  const std::string db = dir.file("runs.db");
  make_database(db);
  EXPECT_NO_THROW(check_database_path(db, DatabaseUse::kExisting, "--db"));
  const std::string empty = dir.file("records.db");
  write_text(empty, "");
  EXPECT_NO_THROW(check_database_path(empty, DatabaseUse::kRecords, "records file"));
  EXPECT_NO_THROW(
      check_database_path(dir.file("new/sub/new.db"), DatabaseUse::kCreateOrOpen, "--db"));
  EXPECT_FALSE(fs::exists(dir.file("new")));
}

TEST(DatabaseFile, ACorruptDatabaseIsReportedAsCorruptNamingTheFile) {
  TempDir dir;
  const std::string db = dir.file("sweep.db");
  make_database(db);
  for (const char* side : {"-wal", "-shm"}) fs::remove(db + side);
  testing::corrupt_all_but_first_page(db);
  const auto m = input_error([&] { query_readonly(db, "SELECT * FROM runs"); });
  EXPECT_TRUE(contains(m, db + ": the database file is corrupt or not a SQLite database")) << m;
  EXPECT_FALSE(contains(m, "invalid SQL")) << m;
  EXPECT_TRUE(contains(m, "restore it from a copy")) << m;
}

TEST(DatabaseFile, AHeaderSQLiteCallsAnUnsupportedFormatIsBadInput) {
  // Found by fuzz_ingest: SQLite answers a schema format number it does not know (header bytes
  // 44-47) with a plain SQLITE_ERROR, "unsupported file format", which was a StoreError (exit 1).
  TempDir dir;
  const std::string db = dir.file("records.db");
  make_database(db);
  for (const char* side : {"-wal", "-shm"}) fs::remove(db + side);
  {
    std::fstream f(db, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(44);
    f.write("\0\0\0\x7f", 4);
  }
  const auto m =
      input_error([&] { check_database_path(db, DatabaseUse::kRecords, "records file"); });
  EXPECT_TRUE(contains(m, "records file cannot be read as a SQLite database")) << m;
  EXPECT_TRUE(contains(m, "unsupported file format")) << m;
}

}  // namespace
}  // namespace batchlab::results
