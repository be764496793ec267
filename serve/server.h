// The dashboard's HTTP server (cpp-httplib): the embedded page and the JSON API of docs/serve.md
// over one read-only DashboardDb. What a request may do is decided before any handler runs: only
// GET and HEAD, a Host header naming this server (a DNS-rebinding page on another origin gets
// 403), no body, bounded request lines and parameters; the handlers read through fixed statements.
#pragma once

#include <atomic>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include "serve/dashboard_db.h"

namespace batchlab::serve {

class BoundedHttpServer;

// How many connections the server keeps and how long it waits on each (serve/http_connections.h,
// docs/serve.md).
struct ConnectionLimits {
  int max_connections = 128;       // open at once; at the limit the longest-idle one is closed
  int idle_timeout_ms = 5000;      // waiting for a request, the first or the next
  int request_timeout_ms = 10000;  // from a request's first byte to the end of its headers
  int write_timeout_ms = 10000;    // for an answer to leave
  std::size_t max_request_head = 64 * 1024;  // request line and headers together
  int max_requests_per_connection = 1000;
};

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8470;      // 0: any free port (port() tells which)
  std::string version;  // batchlab's version, shown on the page
  ConnectionLimits limits{};
};

// True for the loopback names and addresses (localhost, 127.0.0.0/8, ::1).
bool is_loopback_host(const std::string& host);

// Thrown by DashboardServer::bind when the address cannot be bound (the port is taken, by another
// `batchlab serve` or anything else, or the address is not one of this machine's); the CLI's exit
// 2. The message names the address, the reason and, when it can be known, what holds the port.
class BindError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class DashboardServer {
 public:
  // `log` receives one line per problem worth a person's attention (the database became
  // unreadable, a handler failed); stderr by default.
  DashboardServer(DashboardDb& db, ServeOptions options,
                  std::function<void(const std::string&)> log = {});
  ~DashboardServer();
  DashboardServer(const DashboardServer&) = delete;
  DashboardServer& operator=(const DashboardServer&) = delete;

  // Binds the socket; throws BindError with the address and the fix.
  void bind();
  int port() const noexcept { return port_; }
  // Serves until stop() (from another thread or a signal-waiting thread).
  void run();
  void stop();

 private:
  void install_routes();
  void install_limits();
  void install_request_checks();
  void install_api();
  void install_assets();
  void report_problem(const std::string& message);

  DashboardDb& db_;
  ServeOptions options_;
  std::function<void(const std::string&)> log_;
  std::unique_ptr<BoundedHttpServer> http_;
  int port_ = 0;
  std::map<std::string, std::string> gzipped_assets_;  // URL path -> gzip of the asset
  // cpp-httplib's stop() only ends a loop that is already running; these let stop() called before
  // (or while) run() starts still end it.
  std::atomic<bool> run_called_{false}, run_returned_{false}, stop_requested_{false};
  std::mutex log_mutex_;
  std::string last_problem_;
};

}  // namespace batchlab::serve
