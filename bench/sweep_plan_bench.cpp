// `sweep plan` at scale: a spec of 100,000 jobs (10 seeds x 10 batch sizes x 10 base LRs x 5
// optimizer/scaling pairs x 20 warmups) parsed, expanded, validated job by job as full experiment
// configs, hashed to run ids and given its derived values. Acceptance: under 2 seconds.
//
//   build/bench/sweep_plan_bench --benchmark_min_time=1
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/config/data_config.h"
#include "sweeps/expand.h"
#include "sweeps/spec.h"

namespace {

namespace fs = std::filesystem;

const char* kBase = R"(schema_version = 1
[model]
arch = "small_resnet"
width = 32
[data]
dataset = "fashion_mnist"
[batch]
global = 128
[optim]
name = "sgd"
base_lr = 0.1
base_batch = 256
momentum = 0.9
weight_decay = 5e-4
[schedule]
warmup_epochs = 1
decay = "cosine"
epochs = 10
[train]
seed = 0
target = { metric = "test_acc", value = 0.9 }
)";

const char* kSpec = R"(schema_version = 1
[sweep]
name = "bench"
experiment = "base.toml"
seeds = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
[grid]
"batch.global" = [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 60000]
"optim.base_lr" = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0]
"schedule.warmup_epochs" = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9,
                            1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0]
[[zip]]
"optim.name" = ["sgd", "nesterov", "lars", "lamb", "adamw"]
"optim.scaling" = ["linear", "linear", "linear", "sqrt", "sqrt"]
[when."optim.name=lars"]
"optim.trust_coefficient" = 0.001
)";

struct Files {
  fs::path dir;
  Files() {
    dir = fs::temp_directory_path() / ("batchlab-plan-bench-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    std::ofstream(dir / "base.toml") << kBase;
    std::ofstream(dir / "spec.toml") << kSpec;
  }
  ~Files() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

batchlab::sweeps::PlanOptions options(unsigned threads) {
  batchlab::sweeps::PlanOptions o;
  o.keep_config_toml = false;  // as `sweep plan` does
  o.threads = threads;
  o.train_size = [](const batchlab::config::DataConfig& data) {
    batchlab::sweeps::TrainSize size;
    size.samples = data.train_size > 0 ? data.train_size : 60000;
    return size;
  };
  return o;
}

void BM_Plan100kJobs(benchmark::State& state) {
  Files files;
  const auto opts = options(static_cast<unsigned>(state.range(0)));
  size_t jobs = 0;
  for (auto _ : state) {
    auto spec = batchlab::sweeps::load_sweep_spec((files.dir / "spec.toml").string());
    auto plan = batchlab::sweeps::expand(spec, opts);
    jobs = plan.jobs.size();
    benchmark::DoNotOptimize(plan.jobs.data());
  }
  state.counters["jobs"] = static_cast<double>(jobs);
  state.counters["us_per_job"] =
      benchmark::Counter(static_cast<double>(jobs) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
// 0 = the default (all hardware threads), 1 = one thread.
BENCHMARK(BM_Plan100kJobs)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
