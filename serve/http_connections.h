// The dashboard's connection handling on top of cpp-httplib (Debian's 0.11.4): cpp-httplib parses
// requests and routes them; this class owns each connection's life. cpp-httplib's own loop gives
// every connection one of 8 threads for as long as it stays open (so 8 idle sockets stall every
// page), waits out its read timeout on each byte of a slow sender, drops the bytes of a pipelined
// second request with the stream that read them, and binds with SO_REUSEPORT (so a second server
// on the same port starts and the kernel splits the requests between the two). Here:
//  - at most ConnectionLimits::max_connections connections are open at once, each on a thread of
//    its own; at the limit the connection idle the longest is closed to make room, and when none
//    is idle the new one gets a 503 at once;
//  - a connection waits at most idle_timeout_ms for a request (the first or the next), a request
//    must arrive whole (request line and headers, at most max_request_head bytes) within
//    request_timeout_ms of its first byte, and an answer must leave within write_timeout_ms;
//  - one buffered stream per connection, so pipelined requests are answered in order;
//  - the listening socket gets SO_REUSEADDR only.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>

#include "serve/server.h"

namespace batchlab::serve {

class BoundedHttpServer : public httplib::Server {
 public:
  explicit BoundedHttpServer(ConnectionLimits limits);
  ~BoundedHttpServer() override;
  BoundedHttpServer(const BoundedHttpServer&) = delete;
  BoundedHttpServer& operator=(const BoundedHttpServer&) = delete;

  // After bind_to_port: a listen backlog for bursts of connections (cpp-httplib listens with a
  // backlog of 5, so a page opening its connections beside a few others has its SYNs dropped and
  // waits a second for the retry).
  void widen_listen_backlog();

  // Ends every connection's wait at once (call before stop(), which joins their threads).
  void wake_all();

  // From a handler: the connection closes after this answer (a refused request may leave bytes
  // unread, which must not be taken for the next request).
  static void close_after_this_request();

  const ConnectionLimits& limits() const noexcept { return limits_; }

 private:
  friend class ConnectionQueue;

  // cpp-httplib calls this (a private virtual of httplib::Server) for every accepted socket.
  bool process_and_close_socket(socket_t sock) override;
  // Closes the connection that has waited longest for a request; false when none is waiting.
  bool evict_idle_connection();
  void set_idle(int fd, bool idle);

  struct Connection {
    bool idle = true;
    bool evicted = false;
    std::chrono::steady_clock::time_point idle_since;
  };

  ConnectionLimits limits_;
  int wake_fd_ = -1;  // an eventfd every connection's poll watches; wake_all() makes it readable
  std::atomic<bool> stopping_{false};
  std::mutex connections_mutex_;
  std::map<int, Connection> connections_;
};

// Why host:port cannot be bound, as far as can be known: the system's reason ("address already in
// use") and, for a port in use, the process listening on it when /proc shows it.
std::string bind_failure_reason(const std::string& host, int port);

}  // namespace batchlab::serve
