// One optimizer step over a real model's parameters on any device: batchlab's LARS and LAMB
// (on a GPU: the multi-tensor path, core/optim/foreach_lars.h, foreach_lamb.h) against torch's
// fused SGD-momentum and fused AdamW (at::_fused_sgd_, at::_fused_adamw_: one kernel per group of
// tensors, what torch.optim's fused=True runs) and batchlab's LAMB on its per-tensor path.
// The GPU half of scripts/gpu/job.sh; bench/optim_bench.cpp is the CPU comparison.
//
//   build/bench/optim_device_bench --device=cuda --model=resnet50 --benchmark_format=json
//   build/bench/optim_device_bench --device=cpu --model=resnet18 --threads=1   (rehearsal)
// --device (cpu, cuda, cuda:N), --model (any image architecture of `batchlab models`, or a bert_*)
// and --threads are taken out of argv before Google Benchmark parses the rest. Every iteration
// waits for the device (torch::cuda::synchronize), so a step's time includes all its kernels.
// Hyper-parameters as in optim_bench.cpp: SGD/LARS momentum 0.9, weight decay 5e-5; AdamW/LAMB
// weight decay 0.01, default betas, LAMB clipping at 1.0 (part of its cost). One group each.
#include <benchmark/benchmark.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_threads.h"
#include "core/config/model_config.h"
#include "core/optim/lamb.h"
#include "core/optim/lars.h"
#include "models/registry.h"

namespace {

using batchlab::optim::Lamb;
using batchlab::optim::LambOptions;
using batchlab::optim::Lars;
using batchlab::optim::LarsOptions;

std::string g_device = "cpu";
std::string g_model = "resnet50";

// Removes --name=value from argv and returns value (or `fallback`).
std::string take_flag(int& argc, char** argv, const char* name, const std::string& fallback) {
  std::string value = fallback;
  const size_t n = std::strlen(name);
  int kept = 0;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], name, n) == 0 && argv[i][n] == '=') {
      value = argv[i] + n + 1;
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  return value;
}

// The model's parameters on the device (float32), each with a fixed random gradient.
std::vector<torch::Tensor> model_parameters() {
  batchlab::config::ModelConfig m;
  m.arch = g_model;
  torch::manual_seed(0);
  std::vector<torch::Tensor> shapes;
  if (g_model.rfind("bert", 0) == 0) {
    shapes = batchlab::models::make_masked_lm(m)->parameters();
  } else {
    shapes = batchlab::models::make_image_classifier(m, 3, 224, 224, 1000)->parameters();
  }
  const torch::Device device(g_device);
  std::vector<torch::Tensor> params;
  for (const auto& s : shapes) {
    auto p = (torch::randn(s.sizes()) * 0.05).to(device).requires_grad_(true);
    p.mutable_grad() = (torch::randn(s.sizes()) * 0.01).to(device);
    params.push_back(p);
  }
  return params;
}

void wait_for_device() {
  if (torch::Device(g_device).is_cuda()) torch::cuda::synchronize();
}

// Times `step` after one untimed call (state allocation, cuDNN/allocator warm-up).
template <class Step>
void run_timed(benchmark::State& state, const std::vector<torch::Tensor>& params, Step&& step) {
  int64_t numel = 0;
  for (const auto& p : params) numel += p.numel();
  step();
  wait_for_device();
  for (auto _ : state) {
    step();
    wait_for_device();
  }
  state.counters["tensors"] = static_cast<double>(params.size());
  state.counters["parameters"] = static_cast<double>(numel);
}

void BM_Lars(benchmark::State& state) {
  auto params = model_parameters();
  Lars opt(params, LarsOptions(0.1).momentum(0.9).weight_decay(5e-5));
  run_timed(state, params, [&] { opt.step(); });
}

void BM_Lamb(benchmark::State& state) {
  auto params = model_parameters();
  Lamb opt(params, LambOptions(1e-3).weight_decay(0.01).max_grad_norm(1.0));
  run_timed(state, params, [&] { opt.step(); });
}

void BM_Lamb_PerTensor(benchmark::State& state) {
  auto params = model_parameters();
  Lamb opt(params,
           LambOptions(1e-3).weight_decay(0.01).max_grad_norm(1.0).fused(false).foreach (false));
  run_timed(state, params, [&] { opt.step(); });
}

void BM_FusedSgdMomentum_Torch(benchmark::State& state) {
  auto params = model_parameters();
  std::vector<torch::Tensor> grads;
  std::vector<torch::Tensor> buffers;
  for (const auto& p : params) {
    grads.push_back(p.grad());
    buffers.push_back(torch::zeros_like(p));
  }
  torch::NoGradGuard no_grad;
  bool first = true;
  run_timed(state, params, [&] {
    at::_fused_sgd_(params, grads, buffers, 5e-5, 0.9, 0.1, 0.0, false, false, first);
    first = false;
  });
}

void BM_FusedAdamW_Torch(benchmark::State& state) {
  auto params = model_parameters();
  std::vector<torch::Tensor> grads, m, v, steps;
  for (const auto& p : params) {
    grads.push_back(p.grad());
    m.push_back(torch::zeros_like(p));
    v.push_back(torch::zeros_like(p));
    steps.push_back(torch::zeros({}, p.options()));  // float32 on the device, as torch.optim
  }
  torch::NoGradGuard no_grad;
  run_timed(state, params, [&] {
    at::_foreach_add_(steps, 1.0);  // as torch.optim does, on the device
    at::_fused_adamw_(params, grads, m, v, {}, steps, 1e-3, 0.9, 0.999, 0.01, 1e-8, false, false);
  });
}

void timed(benchmark::internal::Benchmark* b) {
  b->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.2);
}

BENCHMARK(BM_Lars)->Apply(timed);
BENCHMARK(BM_Lamb)->Apply(timed);
BENCHMARK(BM_Lamb_PerTensor)->Apply(timed);
BENCHMARK(BM_FusedSgdMomentum_Torch)->Apply(timed);
BENCHMARK(BM_FusedAdamW_Torch)->Apply(timed);

}  // namespace

int main(int argc, char** argv) {
  g_device = take_flag(argc, argv, "--device", "cpu");
  g_model = take_flag(argc, argv, "--model", "resnet50");
  batchlab::bench::take_threads_flag(argc, argv);
  benchmark::AddCustomContext("device", g_device);
  benchmark::AddCustomContext("model", g_model);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
