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

#include "results/schema.h"
#include "results/sqlite_util.h"
#include "serve/dashboard_db.h"
#include "serve/server.h"

namespace {

namespace fs = std::filesystem;
namespace results = batchlab::results;
namespace serve = batchlab::serve;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kRuns = 16;
constexpr std::int64_t kStepsPerRun = 62'500;  // x 16 = 1,000,000 steps rows
constexpr std::int64_t kEvalEvery = 500;
constexpr std::int64_t kLayerEvery = 50;        // 62,500 / 50 = 1,250 recorded steps
constexpr std::size_t kLayers = 160;            // x 1,250 = 200,000 layer_stats rows
constexpr std::int64_t kTrainSize = 1'281'167;  // ImageNet's training set
constexpr std::size_t kMaxPoints = 1000;        // what the page asks /api/curves for
constexpr double kPageBudgetBytes = 2.0 * 1024 * 1024;
const char* const kSweepId = "sw-serve-bench";

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double ms_since(Clock::time_point start) { return 1000.0 * seconds_since(start); }

// ------------------------------------------------------------------------------- the database

// The parameter names of torchvision's ResNet-50 (161 of them) less bn1.bias, so the layer count is
// 160 and the rows exactly 200,000. Natural order and dotted names are what the heatmap sorts.
std::vector<std::pair<std::string, std::int64_t>> resnet50_parameters() {
  std::vector<std::pair<std::string, std::int64_t>> p = {
      {"conv1.weight", 9408}, {"bn1.weight", 64}, {"bn1.bias", 64}};
  const int blocks[] = {3, 4, 6, 3};
  std::int64_t in = 64;
  for (int stage = 0; stage < 4; ++stage) {
    const std::int64_t width = 64 << stage, out = width * 4;
    for (int b = 0; b < blocks[stage]; ++b) {
      const std::string prefix = fmt::format("layer{}.{}.", stage + 1, b);
      const std::int64_t block_in = b == 0 ? in : out;
      const std::int64_t convs[] = {block_in * width, width * width * 9, width * out};
      const std::int64_t channels[] = {width, width, out};
      for (int c = 0; c < 3; ++c) {
        p.emplace_back(fmt::format("{}conv{}.weight", prefix, c + 1), convs[c]);
        p.emplace_back(fmt::format("{}bn{}.weight", prefix, c + 1), channels[c]);
        p.emplace_back(fmt::format("{}bn{}.bias", prefix, c + 1), channels[c]);
      }
      if (b == 0) {
        p.emplace_back(prefix + "downsample.0.weight", block_in * out);
        p.emplace_back(prefix + "downsample.1.weight", out);
        p.emplace_back(prefix + "downsample.1.bias", out);
      }
    }
    in = out;
  }
  p.emplace_back("fc.weight", 2048 * 1000);
  p.emplace_back("fc.bias", 1000);
  return p;
}

struct RunSpec {
  std::string run_id;
  std::string optimizer;
  std::int64_t batch = 0;
  double base_lr = 0;
  std::int64_t seed = 0;
};

// 4 optimizers x 4 batch sizes, the grid of a large-batch study; ids shaped like batchlab's (the
// first 16 hex digits of a SHA-256), drawn from a fixed seed so a kept file is found again.
std::vector<RunSpec> run_specs() {
  const char* optimizers[] = {"adamw", "lamb", "lars", "sgd"};
  const double lrs[] = {1e-3, 2e-3, 2.0, 0.1};
  const std::int64_t batches[] = {256, 1024, 4096, 16384};
  std::mt19937_64 rng(20261123);
  std::vector<RunSpec> runs;
  for (int o = 0; o < 4; ++o) {
    for (int b = 0; b < 4; ++b) {
      RunSpec r;
      r.run_id = fmt::format("{:016x}", rng());
      r.optimizer = optimizers[o];
      r.batch = batches[b];
      r.base_lr = lrs[o] * static_cast<double>(batches[b]) / 256.0;
      r.seed = 0;
      runs.push_back(std::move(r));
    }
  }
  return runs;
}

std::string config_toml(const RunSpec& r) {
  return fmt::format(
      "schema_version = 1\n[model]\narch = \"resnet50\"\n[data]\ndataset = \"imagenet\"\n"
      "[batch]\nglobal = {}\nmicro = 256\n[optim]\nname = \"{}\"\nbase_lr = {}\nbase_batch = 256\n"
      "momentum = 0.9\nweight_decay = 5e-05\nscaling = \"linear\"\n[schedule]\nwarmup_epochs = 5\n"
      "decay = \"cosine\"\nepochs = {}\n[train]\nseed = {}\nlayer_stats_every = 50\n",
      r.batch, r.optimizer, r.base_lr, kStepsPerRun * r.batch / kTrainSize, r.seed);
}

// Linear warmup over the first 4% of training, then cosine decay to zero (Goyal et al.).
double lr_at(double base_lr, std::int64_t step) {
  const double warmup = 0.04 * static_cast<double>(kStepsPerRun);
  const double s = static_cast<double>(step);
  if (s < warmup) return base_lr * s / warmup;
  const double t = (s - warmup) / (static_cast<double>(kStepsPerRun) - warmup);
  return 0.5 * base_lr * (1.0 + std::cos(3.141592653589793 * t));
}

// Exactly the row counts this bench needs, at the schema version this build reads.
bool database_complete(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  try {
    results::Connection db(path, SQLITE_OPEN_READONLY);
    if (results::schema_version(db) != results::latest_schema_version()) return false;
    auto count = [&](const char* sql) {
      results::Statement s(db, sql);
      return s.step() ? s.column_int64(0) : -1;
    };
    return count("SELECT count(*) FROM runs") == kRuns &&
           count("SELECT count(*) FROM steps") == kRuns * kStepsPerRun &&
           count("SELECT count(*) FROM layer_stats") ==
               static_cast<std::int64_t>(kLayers) * (kStepsPerRun / kLayerEvery);
  } catch (const std::exception&) {
    return false;
  }
}

void remove_database(const std::string& path) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path + suffix, ec);
}

void generate_database(const std::string& path, const std::vector<RunSpec>& runs) {
  remove_database(path);
  results::Connection db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  // WAL as batchlab's Store writes it, so the server reads the file the way it reads a live sweep.
  if (db.pragma_set("journal_mode", "WAL") != "wal") {
    throw std::runtime_error("cannot switch " + path + " to WAL mode");
  }
  // Generated data: a crash only means generating again, so skip the syncs; a large cache keeps
  // the one big transaction from spilling pages to the WAL half-way.
  db.exec("PRAGMA synchronous = OFF; PRAGMA cache_size = -262144", "bench pragmas");
  results::migrate(db);

  results::Transaction tx(db);
  results::Statement sweep(db,
                           "INSERT INTO sweeps(sweep_id, name, spec_toml, created_at) "
                           "VALUES(?1, ?2, ?3, ?4)");
  sweep.bind_text(1, kSweepId);
  sweep.bind_text(2, "resnet50-imagenet-batch-scaling");
  sweep.bind_text(3, "schema_version = 1\n[sweep]\nname = \"resnet50-imagenet-batch-scaling\"\n");
  sweep.bind_text(4, "2026-11-20T08:00:00.000Z");
  sweep.run();

  results::Statement run(
      db,
      "INSERT INTO runs(run_id, sweep_id, status, config_toml, model, dataset, optimizer, "
      "global_batch, micro_batch, accum_steps, world_size, base_lr, peak_lr, scaling, "
      "warmup_steps, seed, attempts, host, device, git_sha, torch_version, started_at, "
      "finished_at, threads, train_size, steps_per_epoch, total_steps, last_step, train_s) "
      "VALUES(?1, ?2, 'done', ?3, 'resnet50', 'imagenet', ?4, ?5, 256, ?6, 1, ?7, ?7, 'linear', "
      "?8, ?9, 1, 'node07', 'cuda:0', '3f9c2e1a', '2.5.1', ?10, ?11, 8, ?12, ?13, ?14, ?14, ?15)");
  results::Statement step(db,
                          "INSERT INTO steps(run_id, step, epoch, samples, wall_s, lr, train_loss, "
                          "grad_norm, samples_per_s) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
  results::Statement eval(
      db,
      "INSERT INTO evals(run_id, step, epoch, samples, wall_s, train_loss, train_acc, test_loss, "
      "test_acc, gap_loss, gap_acc, val_loss, val_acc, eval_s) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, "
      "?8, ?9, ?10, ?11, ?12, ?13, ?14)");
  results::Statement layer(db,
                           "INSERT INTO layer_stats(run_id, step, layer, numel, weight_norm, "
                           "grad_norm, ratio, trust_ratio, update_norm) VALUES(?1, ?2, ?3, ?4, "
                           "?5, ?6, ?7, ?8, ?9)");

  auto params = resnet50_parameters();
  params.erase(std::remove_if(params.begin(), params.end(),
                              [](const auto& p) { return p.first == "bn1.bias"; }),
               params.end());
  if (params.size() != kLayers) throw std::logic_error("ResNet-50 parameter list is off");

  for (std::size_t i = 0; i < runs.size(); ++i) {
    const RunSpec& r = runs[i];
    std::mt19937_64 rng(1000 + i);
    std::normal_distribution<double> noise(0.0, 1.0);
    const double batch = static_cast<double>(r.batch);
    const double throughput = 2600.0 + 150.0 * static_cast<double>(i % 5);  // samples/s
    // Three loss spikes (the large-batch instabilities the downsampling must keep).
    std::uniform_int_distribution<std::int64_t> spike_at(2000, kStepsPerRun - 2000);
    const std::int64_t spikes[] = {spike_at(rng), spike_at(rng), spike_at(rng)};
    const double final_loss = 0.8 + 0.1 * std::log2(batch / 256.0);
    const double final_acc = 0.765 - 0.01 * std::log2(batch / 256.0);

    double wall = 0.0;
    for (std::int64_t s = 1; s <= kStepsPerRun; ++s) {
      const double sf = static_cast<double>(s);
      const double rate = throughput * (1.0 + 0.03 * noise(rng));
      wall += batch / rate;
      double spike = 0.0;
      for (const std::int64_t at : spikes) {
        if (s >= at) spike += 4.0 * std::exp(-static_cast<double>(s - at) / 150.0);
      }
      const double clean = final_loss + 6.1 * std::exp(-sf / 9000.0);
      const double loss = std::max(0.01, clean * (1.0 + 0.04 * noise(rng)) + spike);
      const double grad =
          (0.4 + 2.0 * std::exp(-sf / 20000.0)) * (1.0 + 0.1 * noise(rng)) + 3.0 * spike;
      step.bind_text(1, r.run_id);
      step.bind_int64(2, s);
      step.bind_double(3, sf * batch / static_cast<double>(kTrainSize));
      step.bind_int64(4, s * r.batch);
      step.bind_double(5, wall);
      step.bind_double(6, lr_at(r.base_lr, s));
      step.bind_double(7, loss);
      step.bind_double(8, grad);
      step.bind_double(9, rate);
      step.run();

      if (s % kEvalEvery == 0) {
        const double progress = 1.0 - std::exp(-sf / 12000.0);
        const double train_acc = std::min(0.99, final_acc * progress * 1.08 + 0.003 * noise(rng));
        const double test_acc = final_acc * progress + 0.004 * noise(rng);
        const double train_l = clean * 0.95, test_l = clean * 1.1 + 0.02 * noise(rng);
        eval.bind_text(1, r.run_id);
        eval.bind_int64(2, s);
        eval.bind_double(3, sf * batch / static_cast<double>(kTrainSize));
        eval.bind_int64(4, s * r.batch);
        eval.bind_double(5, wall);
        eval.bind_double(6, train_l);
        eval.bind_double(7, train_acc);
        eval.bind_double(8, test_l);
        eval.bind_double(9, test_acc);
        eval.bind_double(10, test_l - train_l);
        eval.bind_double(11, train_acc - test_acc);
        eval.bind_double(12, test_l * 0.98);
        eval.bind_double(13, test_acc + 0.002);
        eval.bind_double(14, 28.0 + noise(rng));
        eval.run();
      }

      // Layer statistics for the first run only, as a sweep records them for a chosen run.
      if (i == 0 && s % kLayerEvery == 0) {
        for (std::size_t l = 0; l < params.size(); ++l) {
          const auto& [name, numel] = params[l];
          const bool is_bias = name.find("bias") != std::string::npos;
          const bool is_bn = name.find("bn") != std::string::npos ||
                             name.find("downsample.1") != std::string::npos;
          // Weight norms grow slowly with size; gradient norms differ by layer over decades (BN
          // biases tiny, the first conv and fc large), so the ratio spans ~1e-1 to ~1e4.
          const double w = std::sqrt(static_cast<double>(numel)) * (is_bn ? 0.5 : 0.02) *
                           (1.0 + 0.3 * sf / static_cast<double>(kStepsPerRun));
          const double scale =
              std::pow(10.0, -3.5 + 4.0 * static_cast<double>(l * 37 % 160) / 160.0) *
              (is_bias ? 0.1 : 1.0);
          const double g = scale * (0.2 + std::exp(-sf / 15000.0)) * std::exp(0.3 * noise(rng));
          const double ratio = w / g;
          layer.bind_text(1, r.run_id);
          layer.bind_int64(2, s);
          layer.bind_text(3, name);
          layer.bind_int64(4, numel);
          layer.bind_double(5, w);
          layer.bind_double(6, g);
          layer.bind_double(7, ratio);
          layer.bind_double(8, 0.001 * ratio);
          layer.bind_double(9, lr_at(r.base_lr, s) * 0.001 * w);
          layer.run();
        }
      }
    }

    run.bind_text(1, r.run_id);
    run.bind_text(2, kSweepId);
    run.bind_text(3, config_toml(r));
    run.bind_text(4, r.optimizer);
    run.bind_int64(5, r.batch);
    run.bind_int64(6, std::max<std::int64_t>(1, r.batch / 256));
    run.bind_double(7, r.base_lr);
    run.bind_int64(8, kStepsPerRun / 25);
    run.bind_int64(9, r.seed);
    run.bind_text(10, fmt::format("2026-11-{:02}T08:00:00.000Z", 20 + i / 8));
    run.bind_text(11, fmt::format("2026-11-{:02}T20:00:00.000Z", 22 + i / 8));
    run.bind_int64(12, kTrainSize);
    run.bind_int64(13, kTrainSize / r.batch);
    run.bind_int64(14, kStepsPerRun);
    run.bind_double(15, wall);
    run.run();
  }
  tx.commit();
  // Leave the rows in the main file, as a finished sweep's database is after its last checkpoint.
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)", "checkpoint");
}

// Drops the file's pages from the OS page cache (only this file's: the rest of the machine keeps
// its cache), so the next read comes from disk as on a dashboard opened on a database not touched
// for a while. SQLite's own per-connection page cache (2 MB each) is not affected.
void evict_from_page_cache(const std::string& path) {
  for (const char* suffix : {"", "-wal"}) {
    const int fd = ::open((path + suffix).c_str(), O_RDONLY);
    if (fd < 0) continue;
    ::fdatasync(fd);  // DONTNEED leaves dirty pages in place
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

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
// the document and its four assets, the status poll, the sweeps and the sweep's runs, the curves;
// then, to find a run with layer statistics, one probe of steps=10 for each of the first 4 chosen
// runs (app.js firstLayerRun asks 4 at a time), and the heatmap itself.
std::vector<std::string> page_paths() {
  std::vector<std::string> paths = {"/",
                                    "/assets/app.js",
                                    "/assets/app.css",
                                    "/assets/uPlot.iife.min.js",
                                    "/assets/uPlot.min.css",
                                    "/api/status",
                                    "/api/sweeps",
                                    std::string("/api/runs?sweep=") + kSweepId,
                                    env->curves_path("train_loss")};
  for (int i = 0; i < 4; ++i) {
    paths.push_back(fmt::format("/api/layers?run={}&metric=ratio&steps=10", env->runs[i].run_id));
  }
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
