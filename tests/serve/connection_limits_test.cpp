// The connection limits themselves (ConnectionLimits, serve/http_connections.h), made small so the
// tests take a second: an idle connection is closed after the idle timeout, a slow sender after the
// request timeout, an oversized request head is cut off, a full server refuses a new connection
// with a 503 in JSON at once, and stopping does not wait for idle connections.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "serve/server.h"
#include "tests/serve/http_test_support.h"
#include "tests/serve/serve_test_support.h"

namespace batchlab::serve {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using testing::connect_loopback;
using testing::read_until_closed;
using testing::RunningServer;
using testing::send_all;

using Clock = std::chrono::steady_clock;

ServeOptions small_limits() {
  ServeOptions o{"127.0.0.1", 0, "test"};
  o.limits.max_connections = 4;
  o.limits.idle_timeout_ms = 300;
  o.limits.request_timeout_ms = 600;
  o.limits.max_request_head = 16 * 1024;
  return o;
}

long long ms_since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

TEST(ServeLimits, AnIdleConnectionIsClosedAfterTheIdleTimeout) {
  DashboardDb db(testing::fixture_db());
  RunningServer running(db, small_limits());
  const int fd = connect_loopback(running.port());
  ASSERT_GE(fd, 0);
  const auto start = Clock::now();
  const std::string got = read_until_closed(fd, 3s);
  ::close(fd);
  EXPECT_TRUE(got.empty()) << got;
  EXPECT_GE(ms_since(start), 250);
  EXPECT_LT(ms_since(start), 1500) << "the idle connection stayed open";
}

TEST(ServeLimits, ASlowSenderIsCutOffAtTheRequestTimeout) {
  DashboardDb db(testing::fixture_db());
  RunningServer running(db, small_limits());
  const int fd = connect_loopback(running.port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(send_all(fd, "GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
  const auto start = Clock::now();
  bool cut = false;
  // One byte every 50 ms: never idle for long, never done.
  for (int i = 0; i < 60 && !cut; ++i) {
    cut = !send_all(fd, "x");
    std::this_thread::sleep_for(50ms);
    char c;
    if (::recv(fd, &c, 1, MSG_DONTWAIT) == 0) cut = true;
  }
  ::close(fd);
  EXPECT_TRUE(cut) << "the slow sender was never cut off";
  EXPECT_LT(ms_since(start), 2000);
}

TEST(ServeLimits, AnOversizedRequestHeadIsCutOff) {
  DashboardDb db(testing::fixture_db());
  RunningServer running(db, small_limits());
  std::string request = "GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  while (request.size() < 64 * 1024) request += "X-Filler: " + std::string(100, 'f') + "\r\n";
  const int fd = connect_loopback(running.port());
  ASSERT_GE(fd, 0);
  send_all(fd, request + "\r\n");
  const std::string answer = read_until_closed(fd, 3s);
  ::close(fd);
  EXPECT_EQ(answer.find("HTTP/1.1 200"), std::string::npos) << answer.substr(0, 200);
}

TEST(ServeLimits, AFullServerRefusesANewConnectionWithA503AtOnce) {
  DashboardDb db(testing::fixture_db());
  RunningServer running(db, small_limits());
  std::vector<int> busy;
  for (int i = 0; i < 4; ++i) {
    const int fd = connect_loopback(running.port());
    ASSERT_GE(fd, 0);
    // A request under way (its head not finished): not idle, so not closed to make room.
    send_all(fd, "GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    busy.push_back(fd);
  }
  std::this_thread::sleep_for(100ms);
  const auto start = Clock::now();
  const int extra = connect_loopback(running.port());
  ASSERT_GE(extra, 0);
  send_all(extra, "GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  const std::string answer = read_until_closed(extra, 2s);
  ::close(extra);
  for (int fd : busy) ::close(fd);
  EXPECT_EQ(testing::status_of(answer), 503) << answer;
  EXPECT_TRUE(json::parse(testing::body_of(answer), nullptr, false).contains("error")) << answer;
  EXPECT_LT(ms_since(start), 500);
}

TEST(ServeLimits, AtTheLimitTheLongestIdleConnectionMakesRoom) {
  DashboardDb db(testing::fixture_db());
  RunningServer running(db, small_limits());
  std::vector<int> idle;
  for (int i = 0; i < 4; ++i) idle.push_back(connect_loopback(running.port()));
  std::this_thread::sleep_for(100ms);
  httplib::Client client("127.0.0.1", running.port());
  client.set_read_timeout(2, 0);
  const auto start = Clock::now();
  const auto res = client.Get("/api/status");
  for (int fd : idle) ::close(fd);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_LT(ms_since(start), 250);
}

TEST(ServeLimits, StoppingDoesNotWaitForIdleConnections) {
  DashboardDb db(testing::fixture_db());
  std::vector<int> idle;
  Clock::time_point start;
  {
    ServeOptions o{"127.0.0.1", 0, "test"};  // the default 5 s idle timeout
    RunningServer running(db, o);
    for (int i = 0; i < 10; ++i) idle.push_back(connect_loopback(running.port()));
    std::this_thread::sleep_for(100ms);
    start = Clock::now();
  }
  EXPECT_LT(ms_since(start), 1000);
  for (int fd : idle) ::close(fd);
}

}  // namespace
}  // namespace batchlab::serve
