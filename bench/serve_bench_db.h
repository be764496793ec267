// The database serve_bench.cpp measures the dashboard on: 16 finished runs of a large-batch grid
// with 62,500 steps rows each (1M in all) and 200,000 layer_stats rows for one of them (160
// ResNet-50 parameters x 1,250 recorded steps), written once in one transaction (a few seconds).
#pragma once

#include <fcntl.h>
#include <fmt/format.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/config/batch_geometry.h"
#include "results/schema.h"
#include "results/sqlite_util.h"

namespace serve_bench {

namespace results = batchlab::results;
namespace fs = std::filesystem;

constexpr int kRuns = 16;
constexpr std::int64_t kStepsPerRun = 62'500;  // x 16 = 1,000,000 steps rows
constexpr std::int64_t kEvalEvery = 500;
constexpr std::int64_t kLayerEvery = 50;        // 62,500 / 50 = 1,250 recorded steps
constexpr std::size_t kLayers = 160;            // x 1,250 = 200,000 layer_stats rows
constexpr std::int64_t kTrainSize = 1'281'167;  // ImageNet's training set
constexpr std::int64_t kMicro = 256;            // every run's batch.micro (a multiple of it)
const char* const kSweepId = "sw-serve-bench";

// The parameter names of torchvision's ResNet-50 (161 of them) less bn1.bias, so the layer count is
// 160 and the rows exactly 200,000. Natural order and dotted names are what the heatmap sorts.
inline std::vector<std::pair<std::string, std::int64_t>> resnet50_parameters() {
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
inline std::vector<RunSpec> run_specs() {
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

inline std::string config_toml(const RunSpec& r) {
  return fmt::format(
      "schema_version = 1\n[model]\narch = \"resnet50\"\n[data]\ndataset = \"imagenet\"\n"
      "[batch]\nglobal = {}\nmicro = {}\n[optim]\nname = \"{}\"\nbase_lr = {}\nbase_batch = 256\n"
      "momentum = 0.9\nweight_decay = 5e-05\nscaling = \"linear\"\n[schedule]\nwarmup_epochs = 5\n"
      "decay = \"cosine\"\nepochs = {}\n[train]\nseed = {}\nlayer_stats_every = 50\n",
      r.batch, kMicro, r.optimizer, r.base_lr, kStepsPerRun * r.batch / kTrainSize, r.seed);
}

// Linear warmup over the first 4% of training, then cosine decay to zero (Goyal et al.).
inline double lr_at(double base_lr, std::int64_t step) {
  const double warmup = 0.04 * static_cast<double>(kStepsPerRun);
  const double s = static_cast<double>(step);
  if (s < warmup) return base_lr * s / warmup;
  const double t = (s - warmup) / (static_cast<double>(kStepsPerRun) - warmup);
  return 0.5 * base_lr * (1.0 + std::cos(3.141592653589793 * t));
}

// Exactly the row counts this bench needs, at the schema version this build reads.
inline bool database_complete(const std::string& path) {
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

inline void remove_database(const std::string& path) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path + suffix, ec);
}

inline void generate_database(const std::string& path, const std::vector<RunSpec>& runs) {
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
      "VALUES(?1, ?2, 'done', ?3, 'resnet50', 'imagenet', ?4, ?5, ?16, ?6, 1, ?7, ?7, 'linear', "
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
    run.bind_int64(6, batchlab::config::accumulation(r.batch, kMicro, 1).value_or(0));
    run.bind_double(7, r.base_lr);
    run.bind_int64(8, kStepsPerRun / 25);
    run.bind_int64(9, r.seed);
    run.bind_text(10, fmt::format("2026-11-{:02}T08:00:00.000Z", 20 + i / 8));
    run.bind_text(11, fmt::format("2026-11-{:02}T20:00:00.000Z", 22 + i / 8));
    run.bind_int64(12, kTrainSize);
    run.bind_int64(13, batchlab::config::steps_per_epoch(kTrainSize, r.batch));
    run.bind_int64(14, kStepsPerRun);
    run.bind_double(15, wall);
    run.bind_int64(16, kMicro);
    run.run();
  }
  tx.commit();
  // Leave the rows in the main file, as a finished sweep's database is after its last checkpoint.
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)", "checkpoint");
}

// Drops the file's pages from the OS page cache (only this file's: the rest of the machine keeps
// its cache), so the next read comes from disk as on a dashboard opened on a database not touched
// for a while. SQLite's own per-connection page cache (2 MB each) is not affected.
inline void evict_from_page_cache(const std::string& path) {
  for (const char* suffix : {"", "-wal"}) {
    const int fd = ::open((path + suffix).c_str(), O_RDONLY);
    if (fd < 0) continue;
    ::fdatasync(fd);  // DONTNEED leaves dirty pages in place
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

}  // namespace serve_bench
