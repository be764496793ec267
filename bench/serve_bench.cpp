// `batchlab serve` at scale: a results database of 16 finished runs with 62,500 steps rows each (1M
// in all) and 200,000 layer_stats rows for one of them (160 ResNet-50 parameters x 1,250 recorded
// steps), served by the real DashboardServer in this process and read over HTTP on loopback.
// Acceptance: the curves endpoint for the 16 runs and the heatmap endpoint each answer in under
// 200 ms at the median, and the page's total transfer for that view stays under 2 MB.
//
//   build/bench/serve_bench                  # the database in a temp file, removed at exit
//   BATCHLAB_SERVE_BENCH_DB=build/serve_bench.db build/bench/serve_bench
//                                            # kept there and reused while complete
//
// Before the benchmarks it prints the database's generation time and size, the first requests on
// an evicted file (cold) and what one page load transfers, request by request.
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/serve_bench_db.h"
#include "results/schema.h"
#include "results/sqlite_util.h"
#include "serve/dashboard_db.h"
#include "serve/server.h"

namespace {

using namespace serve_bench;  // the database: kRuns, run_specs(), generate_database(), ...
namespace fs = std::filesystem;
namespace results = batchlab::results;
namespace serve = batchlab::serve;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxPoints = 1000;  // what the page asks /api/curves for
constexpr double kPageBudgetBytes = 2.0 * 1024 * 1024;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double ms_since(Clock::time_point start) { return 1000.0 * seconds_since(start); }

// ------------------------------------------------------------------------------ the server

struct Env {
  std::string path;
  bool keep = false;  // a file named by BATCHLAB_SERVE_BENCH_DB stays for the next run
  std::vector<RunSpec> runs;
  std::unique_ptr<serve::DashboardDb> db;
  std::unique_ptr<serve::DashboardServer> server;
  std::thread thread;
  int port = 0;

  Env() : runs(run_specs()) {
    if (const char* kept = std::getenv("BATCHLAB_SERVE_BENCH_DB"); kept && *kept) {
      path = kept;
      keep = true;
    } else {
      path = (fs::temp_directory_path() / fmt::format("batchlab-serve-bench-{}.db", ::getpid()))
                 .string();
    }
    if (keep && database_complete(path)) {
      fmt::print("database: reusing {}\n", path);
    } else {
      const auto start = Clock::now();
      generate_database(path, runs);
      fmt::print("database: generated in {:.1f} s\n", seconds_since(start));
    }
    std::error_code ec;
    fmt::print("database: {} ({:.1f} MB; {} runs, {} steps rows, {} layer_stats rows)\n", path,
               static_cast<double>(fs::file_size(path, ec)) / 1e6, kRuns, kRuns * kStepsPerRun,
               kLayers * static_cast<std::size_t>(kStepsPerRun / kLayerEvery));
    db = std::make_unique<serve::DashboardDb>(path);
    server = std::make_unique<serve::DashboardServer>(
        *db, serve::ServeOptions{"127.0.0.1", 0, "bench"},
        [](const std::string& line) { fmt::print(stderr, "{}\n", line); });
    server->bind();
    port = server->port();
    thread = std::thread([this] { server->run(); });
  }

  ~Env() {
    server->stop();
    thread.join();
    server.reset();
    db.reset();
    if (!keep) remove_database(path);
  }

  std::string run_list() const {
    std::string ids;
    for (const auto& r : runs) ids += (ids.empty() ? "" : ",") + r.run_id;
    return ids;
  }
  std::string curves_path(const char* y) const {
    return fmt::format("/api/curves?runs={}&y={}&x=step&points={}", run_list(), y, kMaxPoints);
  }
  // As the page asks for the heatmap (app.js: metric and steps=400 always given).
  std::string layers_path() const {
    return fmt::format("/api/layers?run={}&metric=ratio&steps=400", runs[0].run_id);
  }
};

std::unique_ptr<Env> env;

// ------------------------------------------------------------------------------ HTTP helpers

enum class Encoding { kIdentity, kGzip, kBrotli };

// What a browser offers: Chrome sends "gzip, deflate, br" (plus zstd in recent versions, which
// this httplib does not know); httplib's server picks br whenever it is offered.
const char* accept_encoding(Encoding e) {
  switch (e) {
    case Encoding::kGzip:
      return "gzip, deflate";
    case Encoding::kBrotli:
      return "gzip, deflate, br";
    default:
      return "identity";
  }
}
std::unique_ptr<httplib::Client> client() {
  auto c = std::make_unique<httplib::Client>("127.0.0.1", env->port);
  c->set_keep_alive(true);   // as a browser holds its connection
  c->set_decompress(false);  // count the bytes on the wire; the JSON is checked uncompressed
  c->set_read_timeout(60, 0);
  return c;
}

// The JSON of an uncompressed answer, or an error message.
std::string get_json(httplib::Client& c, const std::string& path, json& out, std::size_t& bytes) {
  auto res = c.Get(path.c_str(), {{"Accept-Encoding", "identity"}});
  if (!res) return fmt::format("GET {}: {}", path.substr(0, 80), httplib::to_string(res.error()));
  if (res->status != 200) {
    return fmt::format("GET {}: status {}: {}", path.substr(0, 80), res->status,
                       res->body.substr(0, 200));
  }
  bytes = res->body.size();
  out = json::parse(res->body, nullptr, false);
  if (out.is_discarded()) return "GET " + path.substr(0, 80) + ": not JSON";
  return {};
}

std::string check_curves(const json& d, std::size_t& points) {
  if (!d.contains("series") || d["series"].size() != kRuns) return "curves: not 16 series";
  points = 0;
  for (const auto& s : d["series"]) {
    if (s["x"].size() != s["y"].size()) return "curves: x and y differ in length";
    if (s["y"].size() > kMaxPoints || s["y"].empty()) {
      return fmt::format("curves: a series has {} points (0 < n <= {} expected)", s["y"].size(),
                         kMaxPoints);
    }
    points += s["y"].size();
  }
  return {};
}

std::string check_layers(const json& d) {
  if (!d.contains("layers") || d["layers"].size() != kLayers) return "layers: not 160 layers";
  if (d["steps"].size() != 400) return "layers: not 400 steps";
  for (const auto& row : d["values"]) {
    if (row.size() != 400) return "layers: a row is not 400 values";
  }
  return {};
}

// Times GETs of `path` with the given Accept-Encoding; counters: bytes on the wire per answer and
// its uncompressed JSON size. `check` validates the uncompressed answer once, before timing.
template <class Check>
void run_endpoint(benchmark::State& state, const std::string& path, Encoding encoding, Check check,
                  bool cold = false) {
  auto c = client();
  json body;
  std::size_t json_bytes = 0;
  if (std::string error = get_json(*c, path, body, json_bytes); !error.empty()) {
    state.SkipWithError(error.c_str());
    return;
  }
  if (std::string error = check(body); !error.empty()) {
    state.SkipWithError(error.c_str());
    return;
  }
  const httplib::Headers headers = {{"Accept-Encoding", accept_encoding(encoding)}};
  std::size_t wire = 0;
  std::string received;
  for (auto _ : state) {
    if (cold) {
      state.PauseTiming();
      evict_from_page_cache(env->path);
      state.ResumeTiming();
    }
    auto res = c->Get(path.c_str(), headers);
    if (!res || res->status != 200) {
      state.SkipWithError(res ? fmt::format("status {}", res->status).c_str()
                              : httplib::to_string(res.error()).c_str());
      break;
    }
    wire = res->body.size();
    received = res->get_header_value("Content-Encoding");
  }
  // What the server chose, not what was asked: it compresses only the content types httplib
  // deems compressible, so an answer may come back uncompressed whatever the request offered.
  state.SetLabel("Content-Encoding: " + (received.empty() ? std::string("none") : received));
  state.counters["wire_bytes"] = static_cast<double>(wire);
  state.counters["json_bytes"] = static_cast<double>(json_bytes);
}

// ------------------------------------------------------------------------- one page load, raw

// One request exactly as it crosses the loopback socket: the request bytes sent, the response's
// header bytes and body bytes as received (compressed when the server compressed).
struct Wire {
  std::string path;
  int status = 0;
  std::size_t request_bytes = 0;
  std::size_t header_bytes = 0;
  std::size_t body_bytes = 0;
  std::string content_encoding;
  std::string error;
};

// The headers Chrome 120 sends with a same-origin fetch(url, {cache: 'no-store'}) (the page's API
// calls; its document and asset requests carry about as many bytes). The server's
// Referrer-Policy: no-referrer keeps Referer out.
std::string browser_headers(const std::string& accept_enc) {
  return "Connection: keep-alive\r\n"
         "Pragma: no-cache\r\n"
         "Cache-Control: no-cache\r\n"
         "sec-ch-ua: \"Not_A Brand\";v=\"8\", \"Chromium\";v=\"120\", \"Google "
         "Chrome\";v=\"120\"\r\n"
         "sec-ch-ua-mobile: ?0\r\n"
         "User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
         "Chrome/120.0.0.0 Safari/537.36\r\n"
         "sec-ch-ua-platform: \"Linux\"\r\n"
         "Accept: */*\r\n"
         "Sec-Fetch-Site: same-origin\r\n"
         "Sec-Fetch-Mode: cors\r\n"
         "Sec-Fetch-Dest: empty\r\n"
         "Accept-Encoding: " +
         accept_enc +
         "\r\n"
         "Accept-Language: en-US,en;q=0.9\r\n";
}

// A plain socket rather than httplib's client, so every byte both ways is counted, headers
// included.
Wire fetch_raw(const std::string& path, const std::string& accept_enc) {
  Wire w;
  w.path = path;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(env->port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (fd >= 0) ::close(fd);
    w.error = "cannot connect";
    return w;
  }
  const std::string request = fmt::format("GET {} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n{}\r\n", path,
                                          env->port, browser_headers(accept_enc));
  w.request_bytes = request.size();
  for (std::size_t sent = 0; sent < request.size();) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      ::close(fd);
      w.error = "send failed";
      return w;
    }
    sent += static_cast<std::size_t>(n);
  }
  std::string in;
  char buffer[65536];
  std::size_t header_end = std::string::npos, length = 0;
  for (;;) {
    if (header_end != std::string::npos && in.size() >= header_end + length) break;
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    in.append(buffer, static_cast<std::size_t>(n));
    if (header_end == std::string::npos) {
      const auto end = in.find("\r\n\r\n");
      if (end == std::string::npos) continue;
      header_end = end + 4;
      std::string head = in.substr(0, header_end);
      for (char& ch : head) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      if (const auto at = head.find("\r\ncontent-length:"); at != std::string::npos) {
        length = std::strtoull(head.c_str() + at + 17, nullptr, 10);
      }
      if (const auto at = head.find("\r\ncontent-encoding:"); at != std::string::npos) {
        const auto eol = head.find("\r\n", at + 2);
        w.content_encoding = head.substr(at + 19, eol - at - 19);
        w.content_encoding.erase(0, w.content_encoding.find_first_not_of(' '));
      }
      w.status = std::atoi(in.c_str() + 9);  // "HTTP/1.1 200 OK"
    }
  }
  ::close(fd);
  if (header_end == std::string::npos || in.size() < header_end + length) {
    w.error = "short response";
    return w;
  }
  w.header_bytes = header_end;
  w.body_bytes = in.size() - header_end;
  return w;
}

// What the page fetches to open the curves view of the 16 runs and then the layers view (app.js):
// the document and its four assets, the status poll, the sweeps and the sweep's runs (which say
// which runs have layer statistics), the curves, and the heatmap.
std::vector<std::string> page_paths() {
  std::vector<std::string> paths = {"/",
                                    "/assets/app.js",
                                    "/assets/app.css",
                                    "/assets/dygraph.min.js",
                                    "/assets/dygraph.min.css",
                                    "/api/status",
                                    "/api/sweeps",
                                    std::string("/api/runs?sweep=") + kSweepId,
                                    env->curves_path("train_loss")};
  paths.push_back(env->layers_path());
  return paths;
}

struct PageLoad {
  std::vector<Wire> requests;
  std::size_t total = 0;
  std::string error;
};

PageLoad load_page(const std::string& accept_enc) {
  PageLoad load;
  for (const auto& path : page_paths()) {
    Wire w = fetch_raw(path, accept_enc);
    if (w.error.empty() && w.status != 200) w.error = fmt::format("status {}", w.status);
    if (!w.error.empty() && load.error.empty()) load.error = path + ": " + w.error;
    load.total += w.request_bytes + w.header_bytes + w.body_bytes;
    load.requests.push_back(std::move(w));
  }
  return load;
}

// ---------------------------------------------------------------------------- the benchmarks

void BM_CurvesEndpoint16Runs(benchmark::State& state, Encoding encoding) {
  std::size_t points = 0;
  run_endpoint(state, env->curves_path("train_loss"), encoding,
               [&](const json& d) { return check_curves(d, points); });
  state.counters["points"] = static_cast<double>(points);
}

void BM_CurvesEndpoint16RunsEvals(benchmark::State& state, Encoding encoding) {
  std::size_t points = 0;
  run_endpoint(state, env->curves_path("val_acc"), encoding,
               [&](const json& d) { return check_curves(d, points); });
  state.counters["points"] = static_cast<double>(points);
}

void BM_HeatmapEndpoint(benchmark::State& state, Encoding encoding) {
  run_endpoint(state, env->layers_path(), encoding, check_layers);
}

// The same requests with the database file dropped from the OS page cache before each one.
void BM_CurvesEndpoint16RunsCold(benchmark::State& state, Encoding encoding) {
  run_endpoint(
      state, env->curves_path("train_loss"), encoding,
      [](const json& d) {
        std::size_t points = 0;
        return check_curves(d, points);
      },
      true);
}

void BM_HeatmapEndpointCold(benchmark::State& state, Encoding encoding) {
  run_endpoint(state, env->layers_path(), encoding, check_layers, true);
}

// Every request of one page load (page_paths), the total bytes both ways against the 2 MB budget.
void BM_PageTransfer(benchmark::State& state, Encoding encoding) {
  PageLoad load;
  for (auto _ : state) {
    load = load_page(accept_encoding(encoding));
    if (!load.error.empty()) {
      state.SkipWithError(load.error.c_str());
      return;
    }
  }
  state.counters["total_bytes"] = static_cast<double>(load.total);
  state.counters["requests"] = static_cast<double>(load.requests.size());
  if (static_cast<double>(load.total) >= kPageBudgetBytes) {
    state.SkipWithError(
        fmt::format("page transfer {:.2f} MB >= 2 MB", load.total / 1048576.0).c_str());
  }
}

// Nine repetitions for a median; real time, since the work happens on the server's thread.
#define SERVE_BENCH(fn, name, encoding) \
  BENCHMARK_CAPTURE(fn, name, encoding) \
      ->Unit(benchmark::kMillisecond)   \
      ->UseRealTime()                   \
      ->Repetitions(9)                  \
      ->ReportAggregatesOnly(true)

SERVE_BENCH(BM_CurvesEndpoint16Runs, identity, Encoding::kIdentity);
SERVE_BENCH(BM_CurvesEndpoint16Runs, gzip, Encoding::kGzip);
SERVE_BENCH(BM_CurvesEndpoint16Runs, br, Encoding::kBrotli);
SERVE_BENCH(BM_CurvesEndpoint16RunsEvals, gzip, Encoding::kGzip);
SERVE_BENCH(BM_CurvesEndpoint16RunsEvals, br, Encoding::kBrotli);
SERVE_BENCH(BM_HeatmapEndpoint, identity, Encoding::kIdentity);
SERVE_BENCH(BM_HeatmapEndpoint, gzip, Encoding::kGzip);
SERVE_BENCH(BM_HeatmapEndpoint, br, Encoding::kBrotli);
// Each iteration reads the file from disk again: a few iterations are enough.
SERVE_BENCH(BM_CurvesEndpoint16RunsCold, gzip, Encoding::kGzip)->Iterations(3);
SERVE_BENCH(BM_HeatmapEndpointCold, gzip, Encoding::kGzip)->Iterations(3);
SERVE_BENCH(BM_PageTransfer, gzip, Encoding::kGzip);
SERVE_BENCH(BM_PageTransfer, br, Encoding::kBrotli);

// ------------------------------------------------------------------------------ the report

// The first requests after startup on an evicted file (nothing cached anywhere), then what one
// page load transfers, request by request; printed once before the benchmarks.
void print_report() {
  auto c = client();
  const std::vector<std::pair<std::string, std::string>> endpoints = {
      {"curves (16 runs)", env->curves_path("train_loss")}, {"heatmap", env->layers_path()}};
  for (const auto& [name, path] : endpoints) {
    evict_from_page_cache(env->path);
    for (const char* when : {"first request, cold file", "second request, warm"}) {
      const auto start = Clock::now();
      auto res = c->Get(path.c_str(), {{"Accept-Encoding", "gzip, deflate"}});
      fmt::print("{:<18} {:<26} {:8.1f} ms (status {})\n", name, when, ms_since(start),
                 res ? res->status : 0);
    }
  }
  for (const Encoding e : {Encoding::kGzip, Encoding::kBrotli}) {
    const PageLoad load = load_page(accept_encoding(e));
    fmt::print("\npage load, Accept-Encoding: {}{}\n", accept_encoding(e),
               load.error.empty() ? "" : "  ERROR " + load.error);
    fmt::print("  {:<44} {:>6} {:>5} {:>5} {:>9} {:>9}\n", "request", "status", "enc", "req B",
               "resp hdr B", "body B");
    for (const Wire& w : load.requests) {
      std::string shown = w.path.size() > 44 ? w.path.substr(0, 41) + "..." : w.path;
      fmt::print("  {:<44} {:>6} {:>5} {:>5} {:>9} {:>9}\n", shown, w.status,
                 w.content_encoding.empty() ? "-" : w.content_encoding, w.request_bytes,
                 w.header_bytes, w.body_bytes);
    }
    fmt::print("  total {} B = {:.3f} MB (budget 2 MB)\n", load.total,
               static_cast<double>(load.total) / 1048576.0);
  }
  fmt::print("\n");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  try {
    env = std::make_unique<Env>();
    print_report();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "serve_bench: %s\n", e.what());
    env.reset();
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  env.reset();
  benchmark::Shutdown();
  return 0;
}
