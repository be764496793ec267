// What the dashboard answers about the file on disk now: a database overwritten in place or
// replaced by another batchlab database is read anew by every endpoint, one replaced by another
// kind of file (or emptied) is refused with the reason
// (503, never a parameter blamed); filters compare numbers as numbers and refuse values that are
// not; and reading a database leaves nothing beside it (no empty -wal or -shm), while a writer that
// starts later is still seen.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "results/query.h"
#include "results/sqlite_util.h"
#include "serve/api_runs.h"
#include "serve/errors.h"
#include "tests/cli/cli_runner.h"
#include "tests/serve/http_test_support.h"
#include "tests/serve/serve_test_support.h"

namespace batchlab::serve {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::read_bytes;
using testing::RunningServer;

// A copy of the fixture in `dir`, changed by `sql` (run with a writer that then closes, so the
// file stands alone, without -wal or -shm).
fs::path changed_copy(const fs::path& dir, const std::string& name, const std::string& sql) {
  const fs::path path = dir / name;
  fs::copy_file(testing::fixture_db(), path);
  if (!sql.empty()) {
    results::Connection writer(path.string(), SQLITE_OPEN_READWRITE);
    writer.exec(sql, "test");
  }
  return path;
}

// Writes `bytes` over `path` in place: the same file (inode), other contents.
void overwrite_in_place(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::size_t count_in(const fs::path& db, const std::string& sql) {
  return std::stoul(results::query_readonly(db.string(), sql).rows.at(0).at(0).value_or("0"));
}

bool no_wal_or_shm(const fs::path& db) {
  return !fs::exists(db.string() + "-wal") && !fs::exists(db.string() + "-shm");
}

// Every endpoint the page reads, for one run.
std::vector<std::string> every_endpoint(const std::string& run) {
  return {"/api/sweeps",
          "/api/runs",
          "/api/curves?runs=" + run,
          "/api/noise?runs=" + run,
          "/api/layers?run=" + run,
          "/api/milestones",
          "/api/report",
          "/api/study"};
}

TEST(ServeFreshness, ADatabaseOverwrittenInPlaceIsReadAnewByEveryEndpoint) {
  cli::testing::TempDir dir("serve-fresh");
  const fs::path served = changed_copy(dir.path, "served.db", "");
  const std::string gone_run = testing::column_of("SELECT run_id FROM runs ORDER BY run_id").at(0);
  const fs::path other = changed_copy(
      dir.path, "other.db",
      "DELETE FROM runs WHERE run_id = '" + gone_run + "'; UPDATE sweeps SET name = 'renamed'");
  const std::size_t runs_after = count_in(other, "SELECT count(*) FROM runs");

  DashboardDb db(served.string());
  RunningServer running(db);
  httplib::Client client("127.0.0.1", running.port());
  for (const auto& path : every_endpoint(gone_run)) {
    const auto res = client.Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 200) << path << " " << res->body;
  }

  overwrite_in_place(served, read_bytes(other));
  const auto runs = client.Get("/api/runs");
  ASSERT_TRUE(runs);
  ASSERT_EQ(runs->status, 200) << runs->body;
  EXPECT_EQ(json::parse(runs->body)["rows"].size(), runs_after) << "/api/runs answered from before";
  const auto sweeps = client.Get("/api/sweeps");
  ASSERT_TRUE(sweeps);
  ASSERT_EQ(sweeps->status, 200) << sweeps->body;
  EXPECT_EQ(json::parse(sweeps->body)["sweeps"][0]["name"], "renamed") << sweeps->body;
  const auto curves = client.Get("/api/curves?runs=" + gone_run);
  ASSERT_TRUE(curves);
  EXPECT_EQ(curves->status, 404) << "/api/curves still serves a run the file no longer has";
  EXPECT_EQ(client.Get("/api/report")->status, 200);

  // Emptied in place: no endpoint answers from before, and none blames a parameter.
  overwrite_in_place(served, "");
  for (const auto& path : every_endpoint(gone_run)) {
    const auto res = client.Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 503) << path << " " << res->body;
    const json body = json::parse(res->body, nullptr, false);
    EXPECT_FALSE(body.contains("param")) << path << " " << res->body;
    EXPECT_NE(body.value("error", "").find("not one batchlab wrote"), std::string::npos)
        << path << " " << res->body;
  }
  const auto status = client.Get("/api/status");
  ASSERT_TRUE(status);
  EXPECT_FALSE(json::parse(status->body)["error"].is_null()) << status->body;
}

// How a Slurm-run study's coordinator publishes: every snapshot is a new file renamed into place.
// The dashboard follows a batchlab database put there (answers from the new file at once), and
// refuses only a file that is not one.
TEST(ServeFreshness, ADatabaseRenamedIntoPlaceIsFollowedAndAnythingElseRefused) {
  cli::testing::TempDir dir("serve-fresh");
  const fs::path served = changed_copy(dir.path, "served.db", "");
  const std::string run = testing::column_of("SELECT run_id FROM runs ORDER BY run_id").at(0);
  DashboardDb db(served.string());
  RunningServer running(db);
  httplib::Client client("127.0.0.1", running.port());
  ASSERT_EQ(client.Get("/api/runs")->status, 200);
  for (int publish = 0; publish < 3; ++publish) {
    // The next snapshot: one run fewer each time.
    const fs::path next = changed_copy(
        dir.path, fmt::format("next{}.db", publish),
        fmt::format("DELETE FROM runs WHERE run_id IN (SELECT run_id FROM runs ORDER BY run_id "
                    "LIMIT {})",
                    publish + 1));
    const std::size_t runs_now = count_in(next, "SELECT count(*) FROM runs");
    fs::rename(next, served);
    for (const auto& path : every_endpoint(run)) {
      const auto res = client.Get(path);
      ASSERT_TRUE(res) << path;
      EXPECT_NE(res->status, 503) << path << " " << res->body;
    }
    const auto runs = client.Get("/api/runs");
    ASSERT_EQ(runs->status, 200) << runs->body;
    EXPECT_EQ(json::parse(runs->body)["rows"].size(), runs_now) << "answered from the old file";
  }
  const fs::path junk = dir.path / "junk.db";
  std::ofstream(junk) << "not a database at all";
  fs::rename(junk, served);
  for (const auto& path : every_endpoint(run)) {
    const auto res = client.Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 503) << path << " " << res->body;
    EXPECT_NE(json::parse(res->body).value("error", "").find("not an SQLite database"),
              std::string::npos)
        << path << " " << res->body;
  }
  fs::remove(served);
  const auto gone = client.Get("/api/runs");
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->status, 503);
  EXPECT_NE(gone->body.find("gone"), std::string::npos) << gone->body;
}

json runs_with(const Query& q) {
  DashboardDb db(testing::fixture_db());
  return db.with_connection([&](results::Connection& c) { return runs_endpoint(c, q); });
}

TEST(ServeFilters, NumericKeysTakeFiniteNumbersOnly) {
  for (const std::string filter :
       {"global_batch:gt:1e309", "global_batch:lt:abc", "global_batch:eq:0x80",
        "global_batch:eq: 128", "global_batch:eq:128abc", "global_batch:ge:nan",
        "global_batch:le:inf", "global_batch:eq:", "base_lr:gt:-", "final_val_acc:gt:1e-400x",
        "seed:ne:+-1"}) {
    try {
      runs_with({{"filter", filter}});
      ADD_FAILURE() << filter << " was accepted";
    } catch (const BadRequest& e) {
      EXPECT_EQ(e.param(), "filter") << filter;
      EXPECT_NE(std::string(e.what()).find("not a finite number"), std::string::npos) << e.what();
    }
  }
  // Numbers compare as numbers, however they are written.
  const auto expected = testing::count_of("SELECT count(*) FROM runs WHERE global_batch >= 128");
  for (const std::string filter : {"global_batch:ge:128", "global_batch:ge:1.28e2",
                                   "global_batch:gt:127.5", "global_batch:ge:128.0"}) {
    EXPECT_EQ(runs_with({{"filter", filter}})["rows"].size(), static_cast<std::size_t>(expected))
        << filter;
  }
  // Text keys compare as text, and contains stays a text match on any key.
  EXPECT_EQ(runs_with({{"filter", "optimizer:eq:lars"}})["rows"].size(),
            static_cast<std::size_t>(
                testing::count_of("SELECT count(*) FROM runs WHERE optimizer = 'lars'")));
  EXPECT_EQ(runs_with({{"filter", "global_batch:contains:12"}})["rows"].size(),
            static_cast<std::size_t>(testing::count_of(
                "SELECT count(*) FROM runs WHERE CAST(global_batch AS TEXT) LIKE '%12%'")));
}

TEST(ServeReadOnly, ReadingLeavesNoWalOrShmBesideTheDatabase) {
  cli::testing::TempDir dir("serve-nowal");
  const fs::path copy = changed_copy(dir.path, "copy.db", "");
  ASSERT_TRUE(no_wal_or_shm(copy));
  EXPECT_GT(count_in(copy, "SELECT count(*) FROM runs"), 0u);
  EXPECT_TRUE(no_wal_or_shm(copy)) << "a read-only query left -wal/-shm files";
  {
    DashboardDb db(copy.string());
    RunningServer running(db);
    httplib::Client client("127.0.0.1", running.port());
    const std::string run = testing::column_of("SELECT run_id FROM runs ORDER BY run_id").at(0);
    for (const auto& path : every_endpoint(run)) {
      const auto res = client.Get(path);
      ASSERT_TRUE(res) << path;
      EXPECT_EQ(res->status, 200) << path;
    }
    EXPECT_TRUE(no_wal_or_shm(copy)) << "serving created -wal/-shm files";
  }
  EXPECT_TRUE(no_wal_or_shm(copy)) << "serving left -wal/-shm files";
}

TEST(ServeReadOnly, AWriterThatStartsLaterIsSeen) {
  cli::testing::TempDir dir("serve-nowal");
  const fs::path copy = changed_copy(dir.path, "copy.db", "");
  DashboardDb db(copy.string());
  RunningServer running(db);
  httplib::Client client("127.0.0.1", running.port());
  const auto before = json::parse(client.Get("/api/sweeps")->body)["sweeps"].size();
  results::Connection writer(copy.string(), SQLITE_OPEN_READWRITE);
  writer.exec("PRAGMA journal_mode = WAL", "test");
  for (int i = 0; i < 3; ++i) {
    writer.exec(fmt::format("INSERT INTO sweeps(sweep_id, name) VALUES ('later{}', 'later')", i),
                "test");
    const auto res = client.Get("/api/sweeps");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    EXPECT_EQ(json::parse(res->body)["sweeps"].size(), before + i + 1) << "commit " << i;
  }
}

}  // namespace
}  // namespace batchlab::serve
