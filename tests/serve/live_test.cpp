// The dashboard beside a sweep that is writing its database (WAL): every request answers without
// a lock error while the sweep's processes commit, the page sees the data change, and serving
// never writes: the database file is byte-for-byte what it was.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "serve/server.h"
#include "tests/cli/cli_runner.h"
#include "tests/serve/serve_test_support.h"
#include "tests/test_paths.h"

namespace batchlab::serve {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A running dashboard on a free port for `db`.
struct LiveServer {
  explicit LiveServer(DashboardDb& db)
      : server(db, ServeOptions{"127.0.0.1", 0, "test"},
               [this](const std::string& line) { problems.push_back(line); }) {
    server.bind();
    thread = std::thread([this] { server.run(); });
  }
  ~LiveServer() {
    server.stop();
    thread.join();
  }
  std::vector<std::string> problems;
  DashboardServer server;
  std::thread thread;
};

// Every endpoint the page calls, for the runs the database has now.
std::vector<std::string> page_requests(httplib::Client& client) {
  std::vector<std::string> paths = {"/api/status", "/api/sweeps", "/api/runs", "/api/milestones",
                                    "/api/report", "/api/study",  "/"};
  const auto runs = client.Get("/api/runs");
  if (!runs || runs->status != 200) return paths;
  std::string ids;
  for (const auto& row : json::parse(runs->body)["rows"]) {
    ids += (ids.empty() ? "" : ",") + row["run_id"].get<std::string>();
  }
  if (!ids.empty()) {
    paths.push_back("/api/curves?runs=" + ids + "&y=train_loss");
    paths.push_back("/api/curves?runs=" + ids + "&y=val_acc&x=samples");
    paths.push_back("/api/noise?runs=" + ids);
    paths.push_back("/api/layers?run=" + ids.substr(0, ids.find(',')));
  }
  return paths;
}

TEST(ServeLive, AnswersEveryRequestWhileASweepWritesTheDatabase) {
  cli::testing::TempDir dir("serve-live");
  // The fixture sweep with three times the epochs: long enough to be read mid-write.
  const fs::path src = fs::path(test_paths::source_dir()) / "tests" / "serve";
  std::string experiment = read_file(src / "fixture_experiment.toml");
  experiment.replace(experiment.find("epochs = 2"), 10, "epochs = 6");
  dir.file("fixture_experiment.toml", experiment);
  dir.file("fixture_sweep.toml", read_file(src / "fixture_sweep.toml"));
  const fs::path db_path = dir.path / "serve_fixture.db";

  std::atomic<bool> sweep_done{false};
  cli::testing::CommandResult sweep;
  std::thread writer([&] {
    // From the sweep's folder: its results path is relative to the working directory.
    sweep = cli::testing::run_shell("cd " + cli::testing::shell_quote(dir.path.string()) + " && " +
                                    test_paths::binary() +
                                    " sweep run fixture_sweep.toml --workers 2 2>&1");
    sweep_done = true;
  });
  // The sweep creates the file and its schema first; serve it as soon as it is a batchlab one.
  std::unique_ptr<DashboardDb> db;
  for (int i = 0; i < 600 && !db && !sweep_done; ++i) {
    try {
      db = std::make_unique<DashboardDb>(db_path.string());
    } catch (const std::exception&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ASSERT_TRUE(db) << "the sweep never made a database:\n" << (writer.join(), sweep.output);

  int requests = 0, failures = 0;
  std::set<std::string> versions;
  std::set<std::int64_t> steps_seen;
  {
    LiveServer live(*db);
    httplib::Client client("127.0.0.1", live.server.port());
    while (!sweep_done) {
      for (const auto& path : page_requests(client)) {
        const auto res = client.Get(path);
        ++requests;
        if (!res || res->status != 200) {
          ++failures;
          ADD_FAILURE() << path << " -> "
                        << (res ? std::to_string(res->status) + " " + res->body
                                : std::string("no answer"));
        } else if (path == "/api/status") {
          versions.insert(json::parse(res->body)["data_version"].get<std::string>());
        } else if (path == "/api/sweeps") {
          const json s = json::parse(res->body)["sweeps"];
          if (!s.empty()) steps_seen.insert(s[0]["steps_done"].get<std::int64_t>());
        }
      }
    }
    EXPECT_TRUE(live.problems.empty()) << live.problems.front();
  }
  writer.join();
  EXPECT_EQ(sweep.exit_code, 0) << sweep.output;
  EXPECT_EQ(failures, 0);
  EXPECT_GT(requests, 50) << "too few requests overlapped the sweep to mean anything";
  EXPECT_GE(versions.size(), 3u) << "the data version never moved while the sweep wrote";
  EXPECT_GE(steps_seen.size(), 3u) << "the overview never saw progress";
}

TEST(ServeLive, ServingWritesNothing) {
  cli::testing::TempDir dir("serve-readonly");
  const fs::path db_path = dir.path / "copy.db";
  fs::copy_file(testing::fixture_db(), db_path);
  const std::string before = read_file(db_path);
  const auto mtime = fs::last_write_time(db_path);
  {
    DashboardDb db(db_path.string());
    LiveServer live(db);
    httplib::Client client("127.0.0.1", live.server.port());
    for (int round = 0; round < 5; ++round) {
      for (const auto& path : page_requests(client)) {
        const auto res = client.Get(path);
        ASSERT_TRUE(res);
        EXPECT_EQ(res->status, 200) << path;
      }
      // Refused requests too: none of them may write either.
      client.Post("/api/runs", "x", "text/plain");
      client.Get("/api/runs?sort=x%3B%20DELETE%20FROM%20runs");
    }
  }
  EXPECT_TRUE(read_file(db_path) == before) << "the database file changed";
  EXPECT_EQ(fs::last_write_time(db_path), mtime);
  // WAL activity aside (a reader may create an empty -wal and the -shm index), nothing else.
  if (fs::exists(dir.path / "copy.db-wal")) {
    EXPECT_EQ(fs::file_size(dir.path / "copy.db-wal"), 0u);
  }
}

}  // namespace
}  // namespace batchlab::serve
