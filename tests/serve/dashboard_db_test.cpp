#include "serve/dashboard_db.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>

#include "tests/cli/cli_runner.h"
#include "tests/serve/serve_test_support.h"

namespace batchlab::serve {
namespace {

namespace fs = std::filesystem;

TEST(DashboardDb, HealthNamesAGoneFileAndOneThatTookItsPlace) {
  cli::testing::TempDir dir("serve-db");
  const fs::path path = dir.path / "copy.db";
  fs::copy_file(testing::fixture_db(), path);
  DashboardDb db(path.string());
  EXPECT_EQ(db.health(), "");
  fs::rename(path, dir.path / "moved.db");
  EXPECT_NE(db.health().find("the database file is gone"), std::string::npos) << db.health();
  fs::rename(dir.path / "moved.db", path);
  EXPECT_EQ(db.health(), "");
  // A new batchlab database under the same name (a sweep started over, a study's coordinator
  // publishing): followed, its connections opened anew (the pool's still hold the old inode).
  fs::remove(path);
  fs::copy_file(testing::fixture_db(), path);
  EXPECT_EQ(db.health(), "");
  // Another kind of file there: refused with the reason.
  fs::remove(path);
  std::ofstream(path) << "plain text";
  EXPECT_NE(db.health().find("not an SQLite database"), std::string::npos) << db.health();
}

TEST(DashboardDb, TheDataVersionMovesWithEveryCommitAndOnlyThen) {
  cli::testing::TempDir dir("serve-db");
  const fs::path path = dir.path / "copy.db";
  fs::copy_file(testing::fixture_db(), path);
  DashboardDb db(path.string());
  const std::string before = db.data_version();
  db.with_connection([](results::Connection& c) {
    results::Statement s(c, "SELECT count(*) FROM steps");
    return s.step();
  });
  EXPECT_EQ(db.data_version(), before) << "reading changed the version";
  {
    results::Connection writer(path.string(), SQLITE_OPEN_READWRITE);
    writer.exec("PRAGMA journal_mode = WAL", "test");
    writer.exec("INSERT INTO sweeps(sweep_id, name) VALUES ('other', 'other')", "test");
    const std::string after = db.data_version();
    EXPECT_NE(after, before);
    writer.exec("UPDATE runs SET attempts = attempts + 1", "test");
    EXPECT_NE(db.data_version(), after);
  }
}

}  // namespace
}  // namespace batchlab::serve
