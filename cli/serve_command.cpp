// `batchlab serve --db PATH [--port N] [--host ADDR]`: the live dashboard (serve/, docs/serve.md).
// Checks the database before binding (exit 2 with the fix for a missing, foreign, older or newer
// file; exit 1 for a locked one, as report and query say it), binds 127.0.0.1 unless --host says
// otherwise (with a warning), prints the URL, and serves until SIGINT or SIGTERM.
#include <fmt/format.h>

#include "cli/app.h"
#include "cli/args.h"

#ifdef BATCHLAB_WITH_SERVE
#include <arpa/inet.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "serve/dashboard_db.h"
#include "serve/server.h"
#endif

namespace batchlab::cli {

namespace {

constexpr const char* kServeUsage =
    "batchlab serve --db PATH [--port N] [--host ADDR]\n"
    "  a read-only live dashboard over a results database, on http://127.0.0.1:8470/ by default\n"
    "  --port N     port to listen on (default 8470; 0 takes any free port and prints it)\n"
    "  --host ADDR  address to bind (default 127.0.0.1; another address exposes the results to\n"
    "               everyone who can reach it: there is no authentication)";

}  // namespace

#ifdef BATCHLAB_WITH_SERVE

namespace {

std::atomic<bool> g_serve_stop_requested{false};

// --host as given: an address or name, or an IPv6 address in brackets as URLs write it ([::1]).
std::string listen_host(const std::string& given) {
  if (given.empty()) {
    throw UsageError(
        "--host '': empty; give the address to listen on, e.g. 127.0.0.1 (the default), ::1, "
        "or 0.0.0.0 for every interface");
  }
  if (given.front() != '[') return given;
  in6_addr v6{};
  const std::string inner = given.back() == ']' ? given.substr(1, given.size() - 2) : std::string();
  if (inner.empty() || inet_pton(AF_INET6, inner.c_str(), &v6) != 1) {
    throw UsageError(fmt::format(
        "--host {}: not an IPv6 address in brackets; write e.g. --host ::1 or --host '[::1]'",
        given));
  }
  return inner;
}

extern "C" void request_stop(int) { g_serve_stop_requested = true; }

// SIGINT and SIGTERM set a flag (all a signal handler may safely do; blocking the signals instead
// would not cover threads that libraries such as OpenBLAS start before main); a watcher thread
// turns the flag into server.stop() and ends when `done` is set.
std::thread stop_on_signal(serve::DashboardServer& server, const std::atomic<bool>& done) {
  struct sigaction action {};
  action.sa_handler = request_stop;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  return std::thread([&server, &done] {
    while (!g_serve_stop_requested && !done) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (g_serve_stop_requested) server.stop();
  });
}

}  // namespace

int cmd_serve(const std::vector<std::string>& argv) {
  Args args(argv, {{"db"}, {"port"}, {"host"}}, kServeUsage);
  const auto db_path = args.value("db");
  if (!db_path) throw UsageError(fmt::format("missing --db PATH\nusage: {}", args.usage()));
  serve::ServeOptions options;
  options.version = BATCHLAB_VERSION;
  if (const auto port = args.integer("port")) {
    if (*port < 0 || *port > 65535) {
      throw UsageError(
          fmt::format("--port {}: not a port; use 0..65535 (0: any free port)", *port));
    }
    options.port = static_cast<int>(*port);
  }
  if (const auto host = args.value("host")) options.host = listen_host(*host);
  if (!serve::is_loopback_host(options.host)) {
    fmt::print(stderr,
               "batchlab serve: warning: listening on {}, not on 127.0.0.1: anyone who can reach "
               "this address can read every run of {} (there is no authentication)\n",
               options.host, *db_path);
  }

  serve::DashboardDb db(*db_path);
  serve::DashboardServer server(db, options);
  try {
    server.bind();
  } catch (const serve::BindError& e) {
    throw UsageError(e.what());
  }
  const std::string shown_host =
      options.host.find(':') != std::string::npos ? "[" + options.host + "]" : options.host;
  fmt::print("batchlab serve: http://{}:{}/  ({}, schema v{}, read-only; Ctrl-C stops)\n",
             shown_host, server.port(), *db_path, db.schema_version());
  std::fflush(stdout);
  std::atomic<bool> done{false};
  std::thread watcher = stop_on_signal(server, done);
  server.run();
  done = true;
  watcher.join();
  return kExitOk;
}

#else

int cmd_serve(const std::vector<std::string>& argv) {
  Args args(argv, {{"db"}, {"port"}, {"host"}}, kServeUsage);
  throw UsageError(
      "this batchlab was built without the dashboard (cpp-httplib or Debian's libjs-dygraphs "
      "was missing at configure time): run `bash scripts/setup.sh`, then rebuild with "
      "`bash scripts/build.sh`");
}

#endif

}  // namespace batchlab::cli
