// `batchlab serve` and `batchlab query` as a user runs them: a second serve on a port a server
// already holds exits 2 naming the port and its holder; --host '' is refused clearly and
// --host '[::1]' serves the IPv6 loopback; a read-only query leaves no -wal or -shm file behind.
#include <gtest/gtest.h>

#include <filesystem>

#include "serve/server.h"
#include "tests/cli/cli_runner.h"
#include "tests/serve/http_test_support.h"
#include "tests/serve/serve_test_support.h"

namespace batchlab::serve {
namespace {

namespace fs = std::filesystem;
using cli::testing::run_batchlab;
using cli::testing::shell_quote;
using cli::testing::TempDir;

TEST(ServeCliHardening, ASecondServeOnAPortAServerHoldsExitsTwoNamingIt) {
  TempDir dir("serve-cli2");
  const fs::path other = dir.path / "other.db";
  fs::copy_file(testing::fixture_db(), other);
  DashboardDb db(testing::fixture_db());
  testing::RunningServer first(db);
  const std::string port = std::to_string(first.port());
  const auto r = testing::run_serve(other.string(), "--port " + port);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("cannot listen on 127.0.0.1:" + port), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("address already in use"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("http://"), std::string::npos) << r.output;
}

TEST(ServeCliHardening, AnEmptyHostIsRefusedClearly) {
  const auto r = testing::run_serve(testing::fixture_db(), "--port 0 --host ''");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--host '': empty"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("warning"), std::string::npos) << r.output;
}

TEST(ServeCliHardening, ABracketedIpv6LoopbackServesThere) {
  const auto r = testing::run_serve(testing::fixture_db(), "--port 0 --host '[::1]'");
  if (r.output.find("Cannot assign requested address") != std::string::npos ||
      r.output.find("not an address of this machine") != std::string::npos) {
    GTEST_SKIP() << "no IPv6 loopback here: " << r.output;
  }
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("http://[::1]:"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("warning"), std::string::npos) << r.output;
  const auto bad = testing::run_serve(testing::fixture_db(), "--port 0 --host '[nonsense]'");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("not an IPv6 address"), std::string::npos) << bad.output;
}

TEST(ServeCliHardening, AQueryLeavesNoWalOrShmFileBehind) {
  TempDir dir("query-nowal");
  const fs::path copy = dir.path / "copy.db";
  fs::copy_file(testing::fixture_db(), copy);
  const auto r = run_batchlab("query --db " + shell_quote(copy.string()) +
                              " \"SELECT count(*) AS n FROM runs\"");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(fs::exists(copy.string() + "-wal")) << "query left " << copy << "-wal";
  EXPECT_FALSE(fs::exists(copy.string() + "-shm")) << "query left " << copy << "-shm";
}

}  // namespace
}  // namespace batchlab::serve
