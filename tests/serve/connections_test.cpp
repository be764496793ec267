// The dashboard's connections (serve/http_connections.h), over loopback sockets: a second server on
// a taken port is refused naming the port and its holder; idle sockets, slow senders and more
// connections than the server keeps do not hold up a normal request; pipelined requests are all
// answered; and the HTTP edges: a GET with a chunked body, two Host headers, an overlong or
// malformed request line are refused, with the JSON error every other refusal has.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
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
using testing::body_of;
using testing::connect_loopback;
using testing::raw_exchange;
using testing::RunningServer;
using testing::send_all;
using testing::status_of;

// Closes the sockets of a test however it ends.
struct Sockets {
  std::vector<int> fds;
  ~Sockets() {
    for (int fd : fds) ::close(fd);
  }
};

// A normal request's time, with a client that gives up after 3 s (so a stalled server fails the
// test in bounded time instead of hanging it).
std::pair<int, std::chrono::milliseconds> timed_get(int port, const std::string& path) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(3, 0);
  client.set_read_timeout(3, 0);
  const auto start = std::chrono::steady_clock::now();
  const auto res = client.Get(path);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  return {res ? res->status : 0, took};
}

TEST(ServeBind, ASecondServerOnATakenPortIsRefusedNamingThePortAndItsHolder) {
  DashboardDb db(testing::fixture_db());
  RunningServer first(db);
  DashboardServer second(db, ServeOptions{"127.0.0.1", first.port(), "test"},
                         [](const std::string&) {});
  try {
    second.bind();
    FAIL() << "a second server bound port " << first.port()
           << ", which the first one serves (the kernel would split requests between them)";
  } catch (const BindError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("127.0.0.1:" + std::to_string(first.port())), std::string::npos)
        << message;
    EXPECT_NE(message.find("in use"), std::string::npos) << message;
    // This test process holds it, and /proc shows that.
    EXPECT_NE(message.find("pid " + std::to_string(::getpid())), std::string::npos) << message;
  }
  // The first server still answers.
  EXPECT_EQ(timed_get(first.port(), "/api/status").first, 200);
}

TEST(ServeConnections, IdleSocketsAndSlowSendersDoNotHoldUpANormalRequest) {
  DashboardDb db(testing::fixture_db());
  RunningServer running(db);
  Sockets idle, slow;
  for (int i = 0; i < 50; ++i) {
    const int fd = connect_loopback(running.port());
    ASSERT_GE(fd, 0);
    idle.fds.push_back(fd);
  }
  for (int i = 0; i < 50; ++i) {
    const int fd = connect_loopback(running.port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(send_all(fd, "GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
    slow.fds.push_back(fd);
  }
  // Slow senders: one more header byte on each every 100 ms, never the end of the request.
  std::atomic<bool> done{false};
  std::thread trickle([&] {
    const std::string header = "X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
    for (std::size_t i = 0; !done && i < 200; ++i) {
      for (int fd : slow.fds) send_all(fd, std::string(1, header[i % header.size()]));
      std::this_thread::sleep_for(100ms);
    }
  });
  std::this_thread::sleep_for(300ms);  // every connection accepted and waiting
  for (const std::string path : {"/api/status", "/api/runs", "/api/sweeps", "/"}) {
    const auto [status, took] = timed_get(running.port(), path);
    EXPECT_EQ(status, 200) << path << " with 50 idle and 50 slow connections open";
    EXPECT_LT(took.count(), 1000) << path << " took " << took.count() << " ms";
    // The figure docs/serve.md quotes.
    std::printf("%s with 50 idle and 50 slow-sender connections open: %lld ms\n", path.c_str(),
                static_cast<long long>(took.count()));
  }
  done = true;
  trickle.join();
}

TEST(ServeConnections, MoreIdleConnectionsThanTheServerKeepsDoNotLockOthersOut) {
  DashboardDb db(testing::fixture_db());
  RunningServer running(db);
  Sockets idle;
  for (int i = 0; i < 150; ++i) {
    const int fd = connect_loopback(running.port());
    ASSERT_GE(fd, 0);
    idle.fds.push_back(fd);
  }
  std::this_thread::sleep_for(300ms);
  const auto [status, took] = timed_get(running.port(), "/api/status");
  EXPECT_EQ(status, 200) << "with 150 idle connections open";
  EXPECT_LT(took.count(), 1000) << took.count() << " ms";
}

TEST(ServeConnections, PipelinedRequestsAreAllAnsweredInOrder) {
  DashboardDb db(testing::fixture_db());
  RunningServer running(db);
  // Three requests in one write, before reading anything: each gets its answer.
  const std::string answer = raw_exchange(
      running.port(),
      "GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
      "GET /api/sweeps HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
      "GET /api/nothing-here HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  const auto first = answer.find("HTTP/1.1 200");
  ASSERT_NE(first, std::string::npos) << answer.substr(0, 300);
  const auto second = answer.find("HTTP/1.1 200", first + 1);
  ASSERT_NE(second, std::string::npos) << "the second request got no answer";
  const auto third = answer.find("HTTP/1.1 404", second + 1);
  ASSERT_NE(third, std::string::npos) << "the third request got no answer";
  EXPECT_NE(answer.find("\"schema_version\""), std::string::npos);
  EXPECT_NE(answer.find("\"sweeps\""), std::string::npos);
}

TEST(ServeHttpEdges, AGetWithAChunkedBodyIsRefusedLikeAnyGetBody) {
  DashboardDb db(testing::fixture_db());
  RunningServer running(db);
  const std::string answer =
      raw_exchange(running.port(),
                   "GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n"
                   "Connection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
  EXPECT_EQ(status_of(answer), 413) << answer.substr(0, 300);
  const json body = json::parse(body_of(answer), nullptr, false);
  ASSERT_TRUE(body.is_object()) << answer;
  EXPECT_NE(body.value("error", "").find("no body"), std::string::npos) << answer;
}

TEST(ServeHttpEdges, TwoHostHeadersAreRefusedWhicheverComesFirst) {
  DashboardDb db(testing::fixture_db());
  RunningServer running(db);
  for (const std::string hosts :
       {"Host: 127.0.0.1\r\nHost: evil.example\r\n", "Host: evil.example\r\nHost: 127.0.0.1\r\n",
        "Host: 127.0.0.1\r\nHost: 127.0.0.1\r\n"}) {
    const std::string answer = raw_exchange(
        running.port(), "GET /api/runs HTTP/1.1\r\n" + hosts + "Connection: close\r\n\r\n");
    const int status = status_of(answer);
    EXPECT_TRUE(status == 400 || status == 403) << hosts << " -> " << answer.substr(0, 200);
    EXPECT_EQ(answer.find("run_id"), std::string::npos) << hosts;
    EXPECT_TRUE(json::parse(body_of(answer), nullptr, false).contains("error")) << answer;
  }
}

TEST(ServeHttpEdges, EveryRefusalCarriesAJsonError) {
  DashboardDb db(testing::fixture_db());
  RunningServer running(db);
  const std::vector<std::pair<std::string, int>> cases = {
      // A request line over 8 KiB.
      {"GET /api/runs?sort=" + std::string(20000, 'a') +
           " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
       414},
      // Not a request line at all.
      {"HELLO\r\nHost: 127.0.0.1\r\n\r\n", 400},
      // Other methods, a foreign host, a body.
      {"DELETE /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", 405},
      {"GET /api/runs HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n", 403},
      {"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 3\r\n"
       "Connection: close\r\n\r\nabc",
       413},
  };
  for (const auto& [request, expected] : cases) {
    const std::string answer = raw_exchange(running.port(), request);
    EXPECT_EQ(status_of(answer), expected) << request.substr(0, 80);
    const json body = json::parse(body_of(answer), nullptr, false);
    EXPECT_TRUE(body.is_object() && body.contains("error"))
        << request.substr(0, 80) << " -> " << answer.substr(0, 300);
    EXPECT_NE(answer.find("application/json"), std::string::npos) << request.substr(0, 80);
  }
  // And the server still answers.
  EXPECT_EQ(timed_get(running.port(), "/api/status").first, 200);
}

TEST(ServeHttpEdges, TheIpv6LoopbackServes) {
  DashboardDb db(testing::fixture_db());
  DashboardServer server(db, ServeOptions{"::1", 0, "test"}, [](const std::string&) {});
  try {
    server.bind();
  } catch (const BindError& e) {
    GTEST_SKIP() << "no IPv6 loopback here: " << e.what();
  }
  std::thread thread([&] { server.run(); });
  httplib::Client client("::1", server.port());
  client.set_read_timeout(3, 0);
  const auto res = client.Get("/api/status", {{"Host", "[::1]:" + std::to_string(server.port())}});
  server.stop();
  thread.join();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
}

}  // namespace
}  // namespace batchlab::serve
