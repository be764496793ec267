// Shared by the dashboard's connection and freshness tests: a server running on a free loopback
// port, and raw sockets to talk to it (bounded in time: every read gives up after a deadline).
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "serve/server.h"

namespace batchlab::serve::testing {

// A dashboard serving `db` on a free loopback port until the object goes.
struct RunningServer {
  explicit RunningServer(DashboardDb& db,
                         ServeOptions options = ServeOptions{"127.0.0.1", 0, "test"})
      : server(db, options, [](const std::string&) {}) {
    server.bind();
    thread = std::thread([this] { server.run(); });
  }
  ~RunningServer() {
    server.stop();
    thread.join();
  }
  int port() const { return server.port(); }
  DashboardServer server;
  std::thread thread;
};

// A TCP connection to 127.0.0.1:port; -1 when it fails.
inline int connect_loopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

inline bool send_all(int fd, const std::string& bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

// Everything the server sends until it closes the connection or `limit` passes.
inline std::string read_until_closed(int fd, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::string answer;
  char buf[8192];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    answer.append(buf, static_cast<std::size_t>(n));
  }
  return answer;
}

// Sends one raw request on a new connection and returns the whole answer (the server closes the
// connection after a refusal, or after a request saying "Connection: close").
inline std::string raw_exchange(int port, const std::string& request,
                                std::chrono::milliseconds limit = std::chrono::seconds(3)) {
  const int fd = connect_loopback(port);
  if (fd < 0) return {};
  send_all(fd, request);
  std::string answer = read_until_closed(fd, limit);
  ::close(fd);
  return answer;
}

// The status code of the first answer in `answer` (0 when there is none).
inline int status_of(const std::string& answer) {
  if (answer.rfind("HTTP/1.1 ", 0) != 0 || answer.size() < 12) return 0;
  return std::stoi(answer.substr(9, 3));
}

// The body of the first answer (what follows its blank line, up to its Content-Length).
inline std::string body_of(const std::string& answer) {
  const auto end = answer.find("\r\n\r\n");
  if (end == std::string::npos) return {};
  std::string head = answer.substr(0, end);
  for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto length = head.find("content-length: ");
  std::size_t size = answer.size() - end - 4;
  if (length != std::string::npos) size = std::stoul(head.substr(length + 16));
  return answer.substr(end + 4, size);
}

inline std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace batchlab::serve::testing
