#include "experiments/bench/throughput.h"

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>
#include <memory>
#include <numeric>

#include "core/config/batch_geometry.h"
#include "core/errors.h"
#include "core/optim/factory.h"
#include "core/train/accumulation.h"
#include "core/train/autocast.h"
#include "core/train/device.h"
#include "core/train/device_selection.h"
#include "core/train/step_timer.h"
#include "experiments/bench/peak_flops.h"
#include "experiments/bench/synthetic_tasks.h"
#include "models/bert_config.h"
#include "models/gpt2_config.h"
#include "models/registry.h"

namespace batchlab::experiments {
namespace {

// The model, its synthetic examples on the device, and what one sample costs.
struct Workload {
  std::unique_ptr<train::Task> task;
  std::string family;
  std::string input;
  int64_t train_flops_per_sample = 0;
  int64_t tokens_per_sample = 0;
};

c10::Device set_up_device(const config::BenchConfig& bench) {
  train::DeviceRequest request;
  request.spec = bench.device;
  request.setting = "--device";
  const c10::Device device = train::resolve_device(request);
  train::use_device(device);
  if (bench.precision == "bf16" && !train::supports_bf16(device)) {
    throw InputError(fmt::format(
        "--precision = bf16: {} ({}) has no bfloat16 tensor cores (compute capability 8.0 or "
        "later needed); use --precision fp32",
        device.str(), train::device_name(device)));
  }
  return device;
}

models::ModelInfo model_info(const std::string& name) {
  for (const auto& info : models::list_models()) {
    if (info.name == name) return info;
  }
  throw Error(fmt::format("--model {} passed check_bench but is not in the models table", name));
}

Workload image_workload(const config::BenchConfig& bench, const models::ModelInfo& info,
                        c10::Device device) {
  config::ModelConfig m;
  m.arch = bench.model;
  SyntheticImages shape;
  shape.examples = bench.batch;
  shape.channels = info.channels;
  shape.height = shape.width = bench.image_size.value_or(info.height);
  shape.num_classes = info.num_classes;
  shape.channels_last = bench.channels_last;
  Workload w;
  w.family = "image";
  w.input = fmt::format("{}x{}x{}, {} classes", shape.channels, shape.height, shape.width,
                        shape.num_classes);
  w.train_flops_per_sample = models::training_flops_per_sample(m, shape.channels, shape.height,
                                                               shape.width, shape.num_classes);
  auto net = models::make_image_classifier(m, shape.channels, shape.height, shape.width,
                                           shape.num_classes);
  w.task = std::make_unique<SyntheticImageTask>(std::move(net), shape, device);
  return w;
}

Workload text_workload(const config::BenchConfig& bench, c10::Device device) {
  config::ModelConfig m;
  m.arch = bench.model;
  SyntheticSequences shape;
  shape.examples = bench.batch;
  shape.seq_len = bench.seq_len.value_or(config::kBenchDefaultSeqLen);
  shape.vocab_size = m.vocab_size;
  // The MLM head runs on as many positions as the FLOP count assumes (BERT's 15%).
  shape.masked_per_sequence = models::default_mlm_positions(shape.seq_len);
  Workload w;
  w.family = "text";
  w.input = fmt::format("{} tokens, {}-token vocabulary", shape.seq_len, shape.vocab_size);
  w.train_flops_per_sample = models::estimate_masked_lm_cost(m, shape.seq_len).training_flops;
  w.tokens_per_sample = shape.seq_len;
  w.task = std::make_unique<SyntheticMlmTask>(models::make_masked_lm(m), shape, device);
  return w;
}

// GPT-2 at its reference context (models::list_models(): 1024 tokens for gpt2_small and up) unless
// --seq-len says otherwise; the positions are the reference context, as OpenAI's releases have.
Workload causal_lm_workload(const config::BenchConfig& bench, const models::ModelInfo& info,
                            c10::Device device) {
  config::ModelConfig m;
  m.arch = bench.model;
  m.max_seq_len = info.seq_len;
  SyntheticTokens shape;
  shape.examples = bench.batch;
  shape.seq_len = bench.seq_len.value_or(info.seq_len);
  shape.vocab_size = models::kGpt2Vocabulary;
  Workload w;
  w.family = "causal_lm";
  w.input = fmt::format("{} tokens, {}-token vocabulary", shape.seq_len, shape.vocab_size);
  w.train_flops_per_sample =
      models::estimate_causal_lm_cost(m, shape.seq_len, shape.vocab_size).training_flops;
  w.tokens_per_sample = shape.seq_len;
  w.task = std::make_unique<SyntheticCausalLmTask>(models::make_causal_lm(m, shape.vocab_size),
                                                   shape, device);
  return w;
}

// One optimizer step over the global batch, as the trainer takes it. Returns the batch's mean
// loss, still on the device (reading it would wait for the GPU).
torch::Tensor train_step(train::Task& task, optim::TrainingOptimizer& optimizer,
                         const std::vector<torch::Tensor>& micro_indices,
                         const train::AccumulationHooks& hooks) {
  optimizer.zero_grad();
  auto step =
      train::accumulate_gradients(task, micro_indices, std::nullopt, nullptr, nullptr, &hooks);
  optimizer.step();
  return step.mean_loss;
}

// Micro-batch j holds examples [j x micro, (j + 1) x micro): int64 [micro] each, on the host. One
// process, so a world of 1; BenchConfig's check refused a batch that `accum` does not divide.
std::vector<torch::Tensor> micro_batch_indices(int64_t batch, int64_t accum) {
  const int64_t micro = config::micro_batch_for_accumulation(batch, accum, 1);
  std::vector<torch::Tensor> out;
  for (int64_t j = 0; j < accum; ++j) out.push_back(torch::arange(j * micro, (j + 1) * micro));
  return out;
}

Workload make_workload(const config::BenchConfig& bench, c10::Device device) {
  const models::ModelInfo info = model_info(bench.model);
  if (info.family == "text") return text_workload(bench, device);
  if (info.family == "causal_lm") return causal_lm_workload(bench, info, device);
  return image_workload(bench, info, device);
}

// Everything about the run but its timings.
BenchResult describe(const config::BenchConfig& bench, const Workload& w, c10::Device device) {
  BenchResult r;
  r.model = bench.model;
  r.family = w.family;
  r.input = w.input;
  r.device = device.str();
  r.device_name = train::device_name(device);
  r.precision = bench.precision;
  r.optimizer = bench.optimizer;
  r.channels_last = bench.channels_last;
  r.batch = bench.batch;
  r.accum = bench.accum;
  r.micro_batch = config::micro_batch_for_accumulation(bench.batch, bench.accum, 1);
  r.tokens_per_sample = w.tokens_per_sample;
  r.warmup_steps = bench.warmup;
  r.threads = at::get_num_threads();
  r.train_flops_per_sample = w.train_flops_per_sample;
  if (bench.peak_tflops) {
    r.peak_tflops = *bench.peak_tflops;
    r.peak_source = "--peak-tflops";
  } else if (auto peak = known_peak(r.device_name, bench.precision)) {
    r.peak_tflops = peak->tflops;
    r.peak_source = peak->source;
  }
  return r;
}

// The warm-up steps, then the timed ones: fills step_s, last_loss and timing.
void time_steps(const config::BenchConfig& bench, Workload& w, optim::TrainingOptimizer& optimizer,
                c10::Device device, BenchResult& r) {
  const auto micro_indices = micro_batch_indices(bench.batch, bench.accum);
  train::AccumulationHooks hooks;
  hooks.precision = train::mixed_precision(bench.precision, device.type());
  w.task->model().train();
  torch::Tensor loss;
  for (int64_t i = 0; i < bench.warmup; ++i) {
    loss = train_step(*w.task, optimizer, micro_indices, hooks);
  }
  train::StepTimer timer(device);
  for (int64_t i = 0; i < bench.steps; ++i) {
    timer.start();
    loss = train_step(*w.task, optimizer, micro_indices, hooks);
    r.step_s.push_back(timer.stop());
  }
  r.last_loss = loss.item<double>();
  r.timing = timer.uses_device_events() ? "cuda events" : "steady clock";
}

void summarize(BenchResult& r) {
  std::vector<double> sorted = r.step_s;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  r.median_step_s = n % 2 == 1 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  const double total = std::accumulate(r.step_s.begin(), r.step_s.end(), 0.0);
  r.samples_per_s = static_cast<double>(r.batch) * static_cast<double>(n) / total;
  r.tokens_per_s = r.samples_per_s * static_cast<double>(r.tokens_per_sample);
  r.achieved_tflops = static_cast<double>(r.train_flops_per_sample) * r.samples_per_s / 1e12;
  if (r.peak_tflops) r.mfu = r.achieved_tflops / *r.peak_tflops;
}

}  // namespace

BenchResult run_bench(const config::BenchConfig& bench) {
  const c10::Device device = set_up_device(bench);
  torch::manual_seed(0);  // the same model and examples on every run
  Workload w = make_workload(bench, device);
  train::configure_cudnn_benchmark(device, w.task->fixed_input_shapes());
  const config::OptimConfig optim = config::bench_optim(bench.optimizer);
  auto optimizer = optim::make_optimizer(optim, w.task->named_parameters(), optim.base_lr);
  BenchResult r = describe(bench, w, device);
  time_steps(bench, w, *optimizer, device, r);
  summarize(r);
  return r;
}

}  // namespace batchlab::experiments
