// `batchlab serve` as a user starts it: errors a person can act on (exit 2, the file and the fix)
// for a missing, foreign, older, newer or locked database and a taken port; a warning for a
// non-loopback --host; SIGTERM stops it cleanly.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>

#include "results/schema.h"
#include "results/sqlite_util.h"
#include "tests/cli/cli_runner.h"
#include "tests/serve/serve_test_support.h"

namespace batchlab::serve {
namespace {

namespace fs = std::filesystem;
using cli::testing::run_batchlab;
using cli::testing::shell_quote;
using cli::testing::TempDir;

// An SQLite file with a table of someone else's.
std::string foreign_db(const TempDir& dir) {
  const auto path = (dir.path / "other.db").string();
  results::Connection db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  db.exec("CREATE TABLE customers(id INTEGER, name TEXT)", "test");
  return path;
}

std::string copy_fixture(const TempDir& dir, const std::string& name) {
  const fs::path to = dir.path / name;
  fs::copy_file(testing::fixture_db(), to);
  return to.string();
}

void set_user_version(const std::string& path, int version) {
  results::Connection db(path, SQLITE_OPEN_READWRITE);
  db.exec("PRAGMA user_version = " + std::to_string(version), "test");
}

TEST(ServeCli, HelpAnswers) {
  const auto r = run_batchlab("serve --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("--host"), std::string::npos);
}

TEST(ServeCli, AMissingFileNamesItself) {
  TempDir dir("serve-cli");
  const auto r = testing::run_serve((dir.path / "nope.db").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("nope.db: no such file"), std::string::npos) << r.output;
  EXPECT_EQ(run_batchlab("serve").exit_code, 2);
}

TEST(ServeCli, AFileThatIsNotSqliteOrNotBatchlabs) {
  TempDir dir("serve-cli");
  const auto text = dir.file("notes.db", "these are my notes, not a database\n");
  auto r = testing::run_serve(text);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("not an SQLite database"), std::string::npos) << r.output;

  r = testing::run_serve(foreign_db(dir));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("not one batchlab wrote"), std::string::npos) << r.output;
}

TEST(ServeCli, OlderAndNewerSchemasSayWhatToDo) {
  TempDir dir("serve-cli");
  const auto older = copy_fixture(dir, "older.db");
  set_user_version(older, 2);
  auto r = testing::run_serve(older);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("older than this batchlab's"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("batchlab results migrate --db"), std::string::npos) << r.output;

  const auto newer = copy_fixture(dir, "newer.db");
  set_user_version(newer, 99);
  r = testing::run_serve(newer);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("newer than this batchlab's"), std::string::npos) << r.output;
}

TEST(ServeCli, TheMigrateCommandTheMessageNamesMakesAnOlderDatabaseServable) {
  TempDir dir("serve-cli");
  const auto older = copy_fixture(dir, "v2.db");
  {
    // A genuine version-2 file: without what migrations 3 to 8 add.
    results::Connection db(older, SQLITE_OPEN_READWRITE);
    db.exec(
        "ALTER TABLE evals DROP COLUMN val_loss; ALTER TABLE evals DROP COLUMN val_acc; "
        "DROP TABLE study_trials; DROP TABLE study_cells; ALTER TABLE runs DROP COLUMN "
        "stop_reason; ALTER TABLE runs DROP COLUMN scheduler_job; ALTER TABLE runs DROP COLUMN "
        "started_over; ALTER TABLE runs DROP COLUMN chance_acc; DROP TABLE budget_trials; DROP "
        "TABLE budget_cells; PRAGMA user_version = 2",
        "test");
  }
  EXPECT_EQ(testing::run_serve(older).exit_code, 2);
  const auto migrated = run_batchlab("results migrate --db " + shell_quote(older));
  EXPECT_EQ(migrated.exit_code, 0) << migrated.output;
  const int latest = results::latest_schema_version();
  EXPECT_NE(migrated.output.find(fmt::format("schema version 2 -> {}", latest)), std::string::npos)
      << migrated.output;
  const auto r = testing::run_serve(older);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(fmt::format("schema v{}", latest)), std::string::npos) << r.output;

  // A file batchlab did not write is not "migrated" into one.
  const auto refused = run_batchlab("results migrate --db " + shell_quote(foreign_db(dir)));
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("a SQLite database of another program"), std::string::npos)
      << refused.output;
}

TEST(ServeCli, ALockedDatabaseIsReportedNotWaitedOnForever) {
  TempDir dir("serve-cli");
  const auto path = copy_fixture(dir, "locked.db");
  // A writer in rollback-journal mode holding an exclusive lock: readers cannot read at all.
  results::Connection writer(path, SQLITE_OPEN_READWRITE);
  writer.exec("PRAGMA journal_mode = DELETE", "test");
  writer.exec("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE", "test");
  const auto r = testing::run_serve(path);
  // A lock is no fault of the input: exit 1 and the message `query` gives (issue 45).
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("the database is locked"), std::string::npos) << r.output;
  const auto q = run_batchlab("query --db " + shell_quote(path) + " \"SELECT 1 FROM runs\"");
  EXPECT_EQ(q.exit_code, r.exit_code) << q.output;
  writer.exec("COMMIT", "test");
}

TEST(ServeCli, ATakenPortIsAnErrorWithTheFix) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  const auto r = testing::run_serve(testing::fixture_db(), "--port " + std::to_string(port));
  ::close(fd);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("cannot listen on 127.0.0.1:" + std::to_string(port)), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("--port"), std::string::npos) << r.output;
  EXPECT_EQ(run_batchlab("serve --db x.db --port 70000").exit_code, 2);
}

TEST(ServeCli, StartsOnLoopbackAndStopsCleanlyOnSigterm) {
  const auto r = testing::run_serve(testing::fixture_db());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("http://127.0.0.1:"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("warning"), std::string::npos) << r.output;
}

TEST(ServeCli, AnotherAddressOnlyWhenAskedAndWithAWarning) {
  const auto r = testing::run_serve(testing::fixture_db(), "--port 0 --host 0.0.0.0");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: listening on 0.0.0.0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("http://0.0.0.0:"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace batchlab::serve
