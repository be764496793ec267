// Optimizer step cost on ResNet-50's parameter set (161 tensors, 25,557,032 float32 values):
// LibTorch's SGD-momentum and AdamW against batchlab's fused LARS and LAMB (and their ATen paths),
// and batchlab's Schedule-Free AdamW and Lion; Muon on a small GPT-2-style decoder (BM_Muon).
// bench/optim_peer.py runs their Python references beside these, in one run.
//
// These steps are memory-bound: their time is the number of passes over parameter-sized arrays
// (LibTorch SGD with weight decay: 11, AdamW: 22; fused LARS: 7, fused LAMB: 11 with clipping).
// Targets (docs/performance.md, "Optimizer steps"): LAMB <= 0.75 x AdamW, LARS <= 1.1 x
// SGD-momentum, measured in the same run. After the runs, the medians and both ratios are printed.
//
//   ./build/bench/optim_bench --threads=2 --benchmark_repetitions=5
//       --benchmark_enable_random_interleaving=true          (one command line)
// --threads sets at::set_num_threads (default 2: every comparison states its thread count).
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_threads.h"
#include "core/optim/fused_kernels.h"
#include "core/optim/grad_clip.h"
#include "core/optim/lamb.h"
#include "core/optim/lars.h"
#include "core/optim/lion.h"
#include "core/optim/muon.h"
#include "core/optim/schedule_free_adamw.h"

namespace {

using batchlab::optim::Lamb;
using batchlab::optim::LambOptions;
using batchlab::optim::Lars;
using batchlab::optim::LarsOptions;
using batchlab::optim::Lion;
using batchlab::optim::LionOptions;
using batchlab::optim::Muon;
using batchlab::optim::MuonOptions;
using batchlab::optim::ScheduleFreeAdamW;
using batchlab::optim::ScheduleFreeAdamWOptions;

// torchvision resnet50().named_parameters() shapes, in order.
const std::vector<std::vector<int64_t>>& resnet50_shapes() {
  static const std::vector<std::vector<int64_t>> shapes = {
      // conv1, bn1 (weight, bias)
      {64, 3, 7, 7},
      {64},
      {64},
      // layer1.0: conv1, bn1, conv2, bn2, conv3, bn3, downsample.0 (conv), downsample.1 (bn)
      {64, 64, 1, 1},
      {64},
      {64},
      {64, 64, 3, 3},
      {64},
      {64},
      {256, 64, 1, 1},
      {256},
      {256},
      {256, 64, 1, 1},
      {256},
      {256},
      // layer1.1: conv1, bn1, conv2, bn2, conv3, bn3
      {64, 256, 1, 1},
      {64},
      {64},
      {64, 64, 3, 3},
      {64},
      {64},
      {256, 64, 1, 1},
      {256},
      {256},
      // layer1.2: conv1, bn1, conv2, bn2, conv3, bn3
      {64, 256, 1, 1},
      {64},
      {64},
      {64, 64, 3, 3},
      {64},
      {64},
      {256, 64, 1, 1},
      {256},
      {256},
      // layer2.0: conv1, bn1, conv2, bn2, conv3, bn3, downsample.0 (conv), downsample.1 (bn)
      {128, 256, 1, 1},
      {128},
      {128},
      {128, 128, 3, 3},
      {128},
      {128},
      {512, 128, 1, 1},
      {512},
      {512},
      {512, 256, 1, 1},
      {512},
      {512},
      // layer2.1: conv1, bn1, conv2, bn2, conv3, bn3
      {128, 512, 1, 1},
      {128},
      {128},
      {128, 128, 3, 3},
      {128},
      {128},
      {512, 128, 1, 1},
      {512},
      {512},
      // layer2.2: conv1, bn1, conv2, bn2, conv3, bn3
      {128, 512, 1, 1},
      {128},
      {128},
      {128, 128, 3, 3},
      {128},
      {128},
      {512, 128, 1, 1},
      {512},
      {512},
      // layer2.3: conv1, bn1, conv2, bn2, conv3, bn3
      {128, 512, 1, 1},
      {128},
      {128},
      {128, 128, 3, 3},
      {128},
      {128},
      {512, 128, 1, 1},
      {512},
      {512},
      // layer3.0: conv1, bn1, conv2, bn2, conv3, bn3, downsample.0 (conv), downsample.1 (bn)
      {256, 512, 1, 1},
      {256},
      {256},
      {256, 256, 3, 3},
      {256},
      {256},
      {1024, 256, 1, 1},
      {1024},
      {1024},
      {1024, 512, 1, 1},
      {1024},
      {1024},
      // layer3.1: conv1, bn1, conv2, bn2, conv3, bn3
      {256, 1024, 1, 1},
      {256},
      {256},
      {256, 256, 3, 3},
      {256},
      {256},
      {1024, 256, 1, 1},
      {1024},
      {1024},
      // layer3.2: conv1, bn1, conv2, bn2, conv3, bn3
      {256, 1024, 1, 1},
      {256},
      {256},
      {256, 256, 3, 3},
      {256},
      {256},
      {1024, 256, 1, 1},
      {1024},
      {1024},
      // layer3.3: conv1, bn1, conv2, bn2, conv3, bn3
      {256, 1024, 1, 1},
      {256},
      {256},
      {256, 256, 3, 3},
      {256},
      {256},
      {1024, 256, 1, 1},
      {1024},
      {1024},
      // layer3.4: conv1, bn1, conv2, bn2, conv3, bn3
      {256, 1024, 1, 1},
      {256},
      {256},
      {256, 256, 3, 3},
      {256},
      {256},
      {1024, 256, 1, 1},
      {1024},
      {1024},
      // layer3.5: conv1, bn1, conv2, bn2, conv3, bn3
      {256, 1024, 1, 1},
      {256},
      {256},
      {256, 256, 3, 3},
      {256},
      {256},
      {1024, 256, 1, 1},
      {1024},
      {1024},
      // layer4.0: conv1, bn1, conv2, bn2, conv3, bn3, downsample.0 (conv), downsample.1 (bn)
      {512, 1024, 1, 1},
      {512},
      {512},
      {512, 512, 3, 3},
      {512},
      {512},
      {2048, 512, 1, 1},
      {2048},
      {2048},
      {2048, 1024, 1, 1},
      {2048},
      {2048},
      // layer4.1: conv1, bn1, conv2, bn2, conv3, bn3
      {512, 2048, 1, 1},
      {512},
      {512},
      {512, 512, 3, 3},
      {512},
      {512},
      {2048, 512, 1, 1},
      {2048},
      {2048},
      // layer4.2: conv1, bn1, conv2, bn2, conv3, bn3
      {512, 2048, 1, 1},
      {512},
      {512},
      {512, 512, 3, 3},
      {512},
      {512},
      {2048, 512, 1, 1},
      {2048},
      {2048},
      // fc (weight, bias)
      {1000, 2048},
      {1000},
  };
  return shapes;
}

constexpr int64_t kResNet50Tensors = 161;
constexpr int64_t kResNet50Params = 25557032;

// Parameters and gradients, float32; a fresh copy of the same values for every benchmark run.
struct Model {
  std::vector<torch::Tensor> params;

  static Model make() {
    static const std::pair<std::vector<torch::Tensor>, std::vector<torch::Tensor>> init = [] {
      torch::manual_seed(0);
      std::vector<torch::Tensor> w;
      std::vector<torch::Tensor> g;
      for (const auto& s : resnet50_shapes()) {
        w.push_back(torch::randn(s) * 0.05);
        g.push_back(torch::randn(s) * 0.01);
      }
      return std::make_pair(w, g);
    }();
    Model m;
    for (size_t i = 0; i < init.first.size(); ++i) {
      m.params.push_back(init.first[i].clone().set_requires_grad(true));
      m.params.back().mutable_grad() = init.second[i].clone();
    }
    return m;
  }
};

// Times optimizer.step() after one untimed step (which allocates the optimizer state).
void run_steps(benchmark::State& state, torch::optim::Optimizer& opt) {
  opt.step();
  for (auto _ : state) opt.step();
  state.counters["params"] = static_cast<double>(kResNet50Params);
}

void BM_SgdMomentum_LibTorch(benchmark::State& state) {
  Model m = Model::make();
  torch::optim::SGD opt(m.params, torch::optim::SGDOptions(0.1).momentum(0.9).weight_decay(5e-5));
  run_steps(state, opt);
}

void BM_AdamW_LibTorch(benchmark::State& state) {
  Model m = Model::make();
  torch::optim::AdamW opt(m.params, torch::optim::AdamWOptions(1e-3).weight_decay(0.01));
  run_steps(state, opt);
}

void BM_Lars(benchmark::State& state) {
  Model m = Model::make();
  Lars opt(m.params, LarsOptions(0.1).momentum(0.9).weight_decay(5e-5));
  run_steps(state, opt);
}

void BM_Lamb(benchmark::State& state) {
  Model m = Model::make();
  Lamb opt(m.params, LambOptions(1e-3).weight_decay(0.01).max_grad_norm(1.0));
  run_steps(state, opt);
}

void BM_Lamb_NoClip(benchmark::State& state) {
  Model m = Model::make();
  Lamb opt(m.params, LambOptions(1e-3).weight_decay(0.01).max_grad_norm(0.0));
  run_steps(state, opt);
}

void BM_Lars_AtenPath(benchmark::State& state) {
  Model m = Model::make();
  Lars opt(m.params, LarsOptions(0.1).momentum(0.9).weight_decay(5e-5).fused(false));
  run_steps(state, opt);
}

void BM_Lamb_AtenPath(benchmark::State& state) {
  Model m = Model::make();
  Lamb opt(m.params, LambOptions(1e-3).weight_decay(0.01).max_grad_norm(1.0).fused(false));
  run_steps(state, opt);
}

// Schedule-Free AdamW and Lion: the same ResNet-50 parameters, multi-tensor path (what "auto"
// runs) and per-tensor path. Peers: schedulefree.AdamWScheduleFree (foreach, its default) and
// lion_pytorch.Lion (bench/optim_peer.py).
void BM_ScheduleFreeAdamW(benchmark::State& state) {
  Model m = Model::make();
  ScheduleFreeAdamW opt(m.params, ScheduleFreeAdamWOptions(1e-3).weight_decay(0.01));
  run_steps(state, opt);
}

void BM_ScheduleFreeAdamW_PerTensor(benchmark::State& state) {
  Model m = Model::make();
  ScheduleFreeAdamW opt(m.params,
                        ScheduleFreeAdamWOptions(1e-3).weight_decay(0.01).foreach (false));
  run_steps(state, opt);
}

void BM_Lion(benchmark::State& state) {
  Model m = Model::make();
  Lion opt(m.params, LionOptions(1e-4).weight_decay(0.1));
  run_steps(state, opt);
}

void BM_Lion_PerTensor(benchmark::State& state) {
  Model m = Model::make();
  Lion opt(m.params, LionOptions(1e-4).weight_decay(0.1).foreach (false));
  run_steps(state, opt);
}

// Muon needs hidden matrices, which ResNet-50 lacks (its one matrix is the classifier): a GPT-2
// style decoder of width 256, 4 layers, vocabulary 8192, context 256 (Hugging Face GPT2 parameter
// shapes, Conv1D [in, out]; bench/optim_peer.py builds the same list). The 16 attention and MLP
// matrices take the Muon rule (Newton-Schulz in bf16, 5 steps: about 18 GFLOP per step), the
// embeddings, biases and norms AdamW.
struct Decoder {
  std::vector<torch::Tensor> matrices;
  std::vector<torch::Tensor> others;

  static Decoder make() {
    constexpr int64_t kWidth = 256;
    constexpr int64_t kLayers = 4;
    torch::manual_seed(0);
    Decoder d;
    auto param = [](std::vector<int64_t> shape) {
      torch::Tensor w = (torch::randn(shape) * 0.02).set_requires_grad(true);
      w.mutable_grad() = torch::randn(shape) * 0.01;
      return w;
    };
    d.others.push_back(param({8192, kWidth}));  // wte
    d.others.push_back(param({256, kWidth}));   // wpe
    for (int64_t l = 0; l < kLayers; ++l) {
      for (auto shape : {std::vector<int64_t>{kWidth, 3 * kWidth},
                         {kWidth, kWidth},
                         {kWidth, 4 * kWidth},
                         {4 * kWidth, kWidth}}) {
        d.matrices.push_back(param(shape));  // c_attn, attn.c_proj, c_fc, mlp.c_proj
      }
      for (int64_t n : {kWidth, kWidth, 3 * kWidth, kWidth, kWidth, kWidth, 4 * kWidth, kWidth}) {
        d.others.push_back(param({n}));  // ln_1 (2), c_attn.bias, c_proj.bias, ln_2 (2), biases
      }
    }
    d.others.push_back(param({kWidth}));  // ln_f
    d.others.push_back(param({kWidth}));
    return d;
  }
};

void BM_Muon(benchmark::State& state) {
  Decoder d = Decoder::make();
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(d.matrices, std::make_unique<MuonOptions>(MuonOptions(0.02)));
  groups.emplace_back(d.others,
                      std::make_unique<MuonOptions>(MuonOptions(3e-4).orthogonalize(false)));
  Muon opt(groups, MuonOptions(0.02));
  opt.step();
  for (auto _ : state) opt.step();
}

// One read pass over all gradients (the global norm): the unit cost of a pass on this machine.
void BM_OneReadPass(benchmark::State& state) {
  Model m = Model::make();
  for (auto _ : state) {
    benchmark::DoNotOptimize(batchlab::optim::global_grad_norm(m.params).host);
  }
}

double min_of(const std::vector<double>& v) {
  return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end());
}

// Milliseconds of wall time, and a `min` aggregate beside mean/median/stddev: under
// --benchmark_report_aggregates_only the reporter sees only aggregates, and the ratios below need
// the minimum as well as the median.
void timed(benchmark::internal::Benchmark* b) {
  b->Unit(benchmark::kMillisecond)->UseRealTime()->ComputeStatistics("min", min_of);
}

BENCHMARK(BM_SgdMomentum_LibTorch)->Apply(timed);
BENCHMARK(BM_AdamW_LibTorch)->Apply(timed);
BENCHMARK(BM_Lars)->Apply(timed);
BENCHMARK(BM_Lamb)->Apply(timed);
BENCHMARK(BM_Lamb_NoClip)->Apply(timed);
BENCHMARK(BM_Lars_AtenPath)->Apply(timed);
BENCHMARK(BM_Lamb_AtenPath)->Apply(timed);
BENCHMARK(BM_OneReadPass)->Apply(timed);
BENCHMARK(BM_ScheduleFreeAdamW)->Apply(timed);
BENCHMARK(BM_ScheduleFreeAdamW_PerTensor)->Apply(timed);
BENCHMARK(BM_Lion)->Apply(timed);
BENCHMARK(BM_Lion_PerTensor)->Apply(timed);
BENCHMARK(BM_Muon)->Apply(timed);

// Console output as usual, plus every per-repetition time kept by benchmark name, and the median
// and min aggregates for when the repetitions themselves are not reported
// (--benchmark_report_aggregates_only).
class RecordingReporter : public benchmark::ConsoleReporter {
 public:
  RecordingReporter() : ConsoleReporter(OO_Tabular) {}  // no colour codes: output goes to docs
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.error_occurred) continue;
      const std::string& name = r.run_name.function_name;
      if (r.run_type == Run::RT_Iteration) {
        times_[name].push_back(r.GetAdjustedRealTime());
      } else if (r.aggregate_name == "median" || r.aggregate_name == "min") {
        aggregates_[name][r.aggregate_name] = r.GetAdjustedRealTime();
      }
    }
  }
  // Median and minimum over repetitions, in the benchmarks' unit (ms); 0 when it did not run. On a
  // shared machine the minimum is the better estimate of the quiet cost, the median the honest one.
  double median(const std::string& name) const {
    std::vector<double> t = sorted(name);
    if (t.empty()) return aggregate(name, "median");
    const size_t n = t.size();
    return n % 2 == 1 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
  }
  double min(const std::string& name) const {
    std::vector<double> t = sorted(name);
    return t.empty() ? aggregate(name, "min") : t.front();
  }

 private:
  std::vector<double> sorted(const std::string& name) const {
    auto it = times_.find(name);
    if (it == times_.end()) return {};
    std::vector<double> t = it->second;
    std::sort(t.begin(), t.end());
    return t;
  }
  double aggregate(const std::string& name, const std::string& which) const {
    auto it = aggregates_.find(name);
    if (it == aggregates_.end()) return 0.0;
    auto value = it->second.find(which);
    return value == it->second.end() ? 0.0 : value->second;
  }

  std::map<std::string, std::vector<double>> times_;
  std::map<std::string, std::map<std::string, double>> aggregates_;
};

void print_ratio(const RecordingReporter& r, const char* what, const char* num, const char* den,
                 double target) {
  const double a = r.median(num);
  const double b = r.median(den);
  if (a <= 0.0 || b <= 0.0) return;
  const double a_min = r.min(num);
  const double b_min = r.min(den);
  std::printf(
      "%-32s median %7.2f / %7.2f ms = %.3f, min %7.2f / %7.2f ms = %.3f"
      " (target <= %.2f: %s)\n",
      what, a, b, a / b, a_min, b_min, a_min / b_min, target, a / b <= target ? "met" : "MISSED");
}

}  // namespace

int main(int argc, char** argv) {
  batchlab::bench::take_threads_flag(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  int64_t count = 0;
  for (const auto& s : resnet50_shapes()) {
    int64_t numel = 1;
    for (int64_t d : s) numel *= d;
    count += numel;
  }
  if (static_cast<int64_t>(resnet50_shapes().size()) != kResNet50Tensors ||
      count != kResNet50Params) {
    std::fprintf(stderr, "shape list is not ResNet-50's: %zu tensors, %lld parameters\n",
                 resnet50_shapes().size(), static_cast<long long>(count));
    return 1;
  }
  std::printf(
      "ResNet-50 parameters: %lld tensors, %lld float32 values; intra-op threads: %d; "
      "fused loops: %s\n",
      static_cast<long long>(kResNet50Tensors), static_cast<long long>(count),
      at::get_num_threads(), batchlab::optim::kernels::instruction_set());

  RecordingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::printf("\nOver the repetitions (--benchmark_repetitions):\n");
  print_ratio(reporter, "LAMB step / LibTorch AdamW step", "BM_Lamb", "BM_AdamW_LibTorch", 0.75);
  print_ratio(reporter, "LARS step / LibTorch SGD step", "BM_Lars", "BM_SgdMomentum_LibTorch", 1.1);
  benchmark::Shutdown();
  return 0;
}
