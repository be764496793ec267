// The dashboard over HTTP (a real server on a free loopback port): the page and its assets, the
// API's answers, and the security rules: SQL in parameters, unknown columns, path traversal,
// oversized requests, foreign Host headers and methods other than GET are refused or harmless.
#include "serve/server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "serve/assets.h"
#include "tests/serve/serve_test_support.h"

namespace batchlab::serve {
namespace {

using nlohmann::json;

class ServeHttp : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = std::make_unique<DashboardDb>(testing::fixture_db());
    server_ = std::make_unique<DashboardServer>(*db_, ServeOptions{"127.0.0.1", 0, "test"},
                                                [](const std::string&) {});
    server_->bind();
    thread_ = std::thread([this] { server_->run(); });
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_decompress(false);
  }
  void TearDown() override {
    server_->stop();
    thread_.join();
  }

  // Sends raw bytes and returns the status code of the answer (0 when the server closed the
  // connection without one) and the whole answer.
  std::pair<int, std::string> raw(const std::string& request) const {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(server_->port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    std::size_t sent = 0;
    while (sent < request.size()) {
      const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;  // the server may refuse and close before reading everything
      sent += static_cast<std::size_t>(n);
    }
    // No shutdown(SHUT_WR): cpp-httplib drops a request whose connection is half-closed; the
    // requests say "Connection: close", so the server ends the exchange.
    std::string answer;
    char buf[4096];
    ssize_t n;
    // Until the server closes or one whole answer is in (after a refused request line the server
    // may keep the connection open until its keep-alive timeout).
    while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) {
      answer.append(buf, static_cast<std::size_t>(n));
      const auto end = answer.find("\r\n\r\n");
      const auto length = answer.find("Content-Length: ");
      if (end != std::string::npos && length != std::string::npos && length < end &&
          answer.size() >= end + 4 + std::stoul(answer.substr(length + 16))) {
        break;
      }
    }
    ::close(fd);
    int status = 0;
    if (answer.rfind("HTTP/1.1 ", 0) == 0) status = std::stoi(answer.substr(9, 3));
    return {status, answer};
  }

  std::unique_ptr<DashboardDb> db_;
  std::unique_ptr<DashboardServer> server_;
  std::thread thread_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(ServeHttp, ThePageAndEveryAssetAreServedFromTheBinary) {
  for (const Asset& asset : assets()) {
    const auto res = client_->Get(std::string(asset.path));
    ASSERT_TRUE(res) << asset.path;
    EXPECT_EQ(res->status, 200) << asset.path;
    EXPECT_EQ(res->get_header_value("Content-Type"), asset.content_type);
    EXPECT_EQ(res->body, asset.body);
    EXPECT_NE(res->get_header_value("Content-Security-Policy").find("default-src 'self'"),
              std::string::npos);
    EXPECT_EQ(res->get_header_value("X-Content-Type-Options"), "nosniff");
    EXPECT_FALSE(res->has_header("Access-Control-Allow-Origin"));
    // A reload revalidates instead of downloading again.
    const auto again =
        client_->Get(std::string(asset.path), {{"If-None-Match", res->get_header_value("ETag")}});
    ASSERT_TRUE(again);
    EXPECT_EQ(again->status, 304) << asset.path;
  }
  // Compressed on the wire for a browser that accepts it.
  const auto big = client_->Get("/assets/dygraph.min.js", {{"Accept-Encoding", "gzip"}});
  ASSERT_TRUE(big);
  EXPECT_EQ(big->get_header_value("Content-Encoding"), "gzip");
  EXPECT_LT(big->body.size(), find_asset("/assets/dygraph.min.js")->body.size() / 2);
}

TEST_F(ServeHttp, StatusAndApiAnswerJson) {
  const auto status = client_->Get("/api/status");
  ASSERT_TRUE(status);
  EXPECT_EQ(status->status, 200);
  const json s = json::parse(status->body);
  EXPECT_EQ(s["db"], testing::fixture_db());
  EXPECT_TRUE(s["error"].is_null());
  EXPECT_FALSE(s["data_version"].get<std::string>().empty());
  const auto runs = client_->Get("/api/runs?sort=global_batch&order=desc");
  ASSERT_TRUE(runs);
  EXPECT_EQ(runs->status, 200);
  EXPECT_EQ(runs->get_header_value("Cache-Control"), "no-store");
  EXPECT_EQ(json::parse(runs->body)["rows"].size(),
            static_cast<std::size_t>(testing::count_of("SELECT count(*) FROM runs")));
  const auto missing = client_->Get("/api/curves?runs=0123456789abcdef");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
}

TEST_F(ServeHttp, SqlInParametersIsRefusedOrHarmless) {
  const std::vector<std::string> attacks = {
      "/api/runs?sort=run_id%3B%20DROP%20TABLE%20runs",
      "/api/runs?sweep=%27%20OR%201%3D1%20--",
      "/api/curves?runs=%27%20OR%201%3D1%20--",
      "/api/curves?runs=a&y=train_loss%20FROM%20runs%3B--",
      "/api/curves?runs=a&x=(SELECT%20config_toml%20FROM%20runs)",
      "/api/layers?run=a&metric=ratio%20FROM%20layer_stats%20UNION%20SELECT%20sql",
      "/api/report?group_by=optimizer)%3BDROP%20TABLE%20runs%3B--",
      "/api/milestones?sweep=x%27%3B%20DELETE%20FROM%20milestones%3B--",
      "/api/runs?sql=SELECT%201"};
  for (const auto& path : attacks) {
    const auto res = client_->Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 400) << path << " -> " << res->body;
    EXPECT_TRUE(json::parse(res->body).contains("param")) << path;
  }
  // A value is bound, never spliced: it matches nothing.
  const auto bound = client_->Get("/api/runs?filter=status:eq:done%27%20OR%20%271%27%3D%271");
  ASSERT_TRUE(bound);
  EXPECT_EQ(bound->status, 200);
  EXPECT_TRUE(json::parse(bound->body)["rows"].empty());
  EXPECT_EQ(testing::count_of("SELECT count(*) FROM runs"),
            static_cast<long long>(json::parse(client_->Get("/api/runs")->body)["rows"].size()));
}

TEST_F(ServeHttp, UnknownColumnsAndParametersAreNamed) {
  for (const std::string path :
       {"/api/runs?sort=password", "/api/runs?keys=secret.key", "/api/runs?filter=passwd:eq:1",
        "/api/curves?runs=a&y=sqlite_master", "/api/layers?run=a&metric=name",
        "/api/status?debug=1"}) {
    const auto res = client_->Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 400) << path;
    const json body = json::parse(res->body);
    EXPECT_FALSE(body["error"].get<std::string>().empty());
    EXPECT_FALSE(body["param"].get<std::string>().empty());
  }
}

TEST_F(ServeHttp, PathTraversalFindsNothing) {
  for (const std::string target :
       {"/../../../../etc/passwd", "/assets/../../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd",
        "/assets/..%2f..%2f..%2fCMakeLists.txt", "//etc/passwd",
        "/assets/%2e%2e%2fserve%2fserver.cpp", "/index.html/..", "/assets/app.js%00.png",
        "/serve/web/app.js", "/CMakeLists.txt"}) {
    const auto [status, answer] =
        raw("GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    EXPECT_TRUE(status == 404 || status == 400) << target << " -> " << status;
    EXPECT_EQ(answer.find("root:"), std::string::npos) << target;
    EXPECT_EQ(answer.find("cmake_minimum_required"), std::string::npos) << target;
    EXPECT_EQ(answer.find("#include"), std::string::npos) << target;
  }
}

TEST_F(ServeHttp, OversizedRequestsAreRefusedAndTheServerStaysUp) {
  // A request line beyond 8 KiB.
  const auto [long_status, long_answer] =
      raw("GET /api/runs?sort=" + std::string(20000, 'a') +
          " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(long_status, 414) << long_answer.substr(0, 200);
  // A body on a GET.
  const auto [body_status, body_answer] =
      raw("GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n"
          "Connection: close\r\n\r\n" +
          std::string(100000, 'x'));
  EXPECT_EQ(body_status, 413) << body_answer.substr(0, 200);
  // A POST with a large body is refused by method before anything reads it.
  const auto [post_status, post_answer] =
      raw("POST /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10000000\r\n"
          "Connection: close\r\n\r\n" +
          std::string(100000, 'x'));
  EXPECT_TRUE(post_status == 405 || post_status == 413) << post_answer.substr(0, 200);
  // Hundreds of headers.
  std::string many = "GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  for (int i = 0; i < 300; ++i) many += "X-H" + std::to_string(i) + ": v\r\n";
  const auto [many_status, many_answer] = raw(many + "\r\n");
  EXPECT_TRUE(many_status == 431 || many_status == 400 || many_status == 0)
      << many_answer.substr(0, 200);
  // A parameter value beyond its bound.
  const auto long_param = client_->Get("/api/runs?keys=" + std::string(3000, 'k'));
  ASSERT_TRUE(long_param);
  EXPECT_EQ(long_param->status, 400);
  // Still serving.
  const auto ok = client_->Get("/api/status");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

TEST_F(ServeHttp, AForeignHostIsRefused) {
  const std::string port = std::to_string(server_->port());
  for (const std::string& host :
       std::vector<std::string>{"evil.example", "evil.example:" + port, "127.0.0.1.evil.example",
                                "localhost.evil.example", "192.168.1.10:" + port}) {
    const auto res = client_->Get("/api/runs", {{"Host", host}});
    ASSERT_TRUE(res) << host;
    EXPECT_EQ(res->status, 403) << host;
    EXPECT_EQ(res->body.find("run_id"), std::string::npos) << host;
  }
  for (const std::string& host : std::vector<std::string>{"127.0.0.1:" + port, "localhost:" + port,
                                                          "[::1]:" + port, "LOCALHOST"}) {
    const auto res = client_->Get("/api/status", {{"Host", host}});
    ASSERT_TRUE(res) << host;
    EXPECT_EQ(res->status, 200) << host;
  }
}

TEST_F(ServeHttp, OnlyGetAndHeadAreAllowed) {
  EXPECT_EQ(client_->Post("/api/runs", "x", "text/plain")->status, 405);
  EXPECT_EQ(client_->Put("/api/runs", "x", "text/plain")->status, 405);
  EXPECT_EQ(client_->Delete("/api/runs")->status, 405);
  EXPECT_EQ(client_->Options("/api/runs")->status, 405);
  const auto head = client_->Head("/api/status");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
}

// The listening socket's local address for a port, from /proc/net/tcp (state 0A = LISTEN):
// "0100007F" is 127.0.0.1 in the kernel's byte order.
std::string listening_address(int port) {
  std::ifstream tcp("/proc/net/tcp");
  std::string line;
  std::getline(tcp, line);
  char wanted[8];
  std::snprintf(wanted, sizeof wanted, "%04X", port);
  while (std::getline(tcp, line)) {
    std::istringstream in(line);
    std::string slot, local, remote, state;
    in >> slot >> local >> remote >> state;
    if (state == "0A" && local.substr(local.find(':') + 1) == wanted) {
      return local.substr(0, local.find(':'));
    }
  }
  return "(not listening)";
}

TEST_F(ServeHttp, BindsTheLoopbackAddressByDefault) {
  EXPECT_EQ(ServeOptions{}.host, "127.0.0.1");
  EXPECT_EQ(listening_address(server_->port()), "0100007F");
}

TEST(ServeHost, LoopbackNames) {
  EXPECT_TRUE(is_loopback_host("127.0.0.1"));
  EXPECT_TRUE(is_loopback_host("127.1.2.3"));
  EXPECT_TRUE(is_loopback_host("localhost"));
  EXPECT_TRUE(is_loopback_host("::1"));
  EXPECT_FALSE(is_loopback_host("0.0.0.0"));
  EXPECT_FALSE(is_loopback_host("10.0.0.1"));
  EXPECT_FALSE(is_loopback_host("localhost.evil.example"));
}

}  // namespace
}  // namespace batchlab::serve
