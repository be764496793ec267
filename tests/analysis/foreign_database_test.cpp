// `batchlab report` on an SQLite file another program wrote (issue 45): it said
// "--group-by optimizer: not a column of the runs table; use one of: " with an empty list; now it
// says that the file is not a batchlab database, exit 2.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>

#include "tests/cli/cli_runner.h"

namespace batchlab::analysis {
namespace {

using cli::testing::contains;
using cli::testing::run_batchlab;
using cli::testing::shell_quote;
using cli::testing::TempDir;

std::string foreign_database(const TempDir& dir) {
  const std::string path = (dir.path / "other.db").string();
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, "CREATE TABLE notes(text TEXT); INSERT INTO notes VALUES ('hi')",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  return path;
}

TEST(ForeignDatabase, ReportSaysItIsNotABatchlabDatabase) {
  TempDir dir("foreign-db");
  const std::string db = foreign_database(dir);
  for (const std::string& group_by : {std::string(), std::string(" --group-by optimizer")}) {
    const auto r = run_batchlab("report --db " + shell_quote(db) + group_by);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_TRUE(contains(r.output, db + ": not a batchlab database (it has no runs table)"))
        << r.output;
    EXPECT_FALSE(contains(r.output, "not a column of the runs table")) << r.output;
  }
}

}  // namespace
}  // namespace batchlab::analysis
