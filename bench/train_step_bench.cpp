// One training step (forward, backward, optimizer update) of the spine experiment's small residual
// CNN on Fashion-MNIST-shaped inputs, through the same Task and accumulation code the trainer uses.
// Run: build/train_step_bench --benchmark_repetitions=3   (2 intra-op threads, as the trainer sets)
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include "core/config/batch_geometry.h"
#include "core/optim/factory.h"
#include "core/train/layer_stats.h"
#include "core/train/trainer.h"
#include "experiments/data/image_dataset.h"
#include "experiments/tasks/image_classification.h"
#include "models/registry.h"

namespace {

using namespace batchlab;

std::unique_ptr<experiments::ImageClassificationTask> make_bench_task(int64_t width) {
  config::DataConfig data;
  data.dataset = "synthetic";
  data.train_size = 4096;
  data.test_size = 256;
  config::ModelConfig model;
  model.width = width;
  auto dataset = data::load_image_dataset(data);
  auto net = models::make_image_classifier(model, 1, 28, 28, dataset.num_classes);
  return std::make_unique<experiments::ImageClassificationTask>(std::move(dataset), net, false,
                                                                torch::kCPU);
}

// Arguments: batch size, accumulation count.
void BM_SmallResnetTrainStep(benchmark::State& state) {
  at::set_num_threads(2);
  torch::manual_seed(0);
  const int64_t batch = state.range(0), accum = state.range(1);
  auto task = make_bench_task(32);
  config::OptimConfig oc;
  oc.name = "sgd";
  oc.weight_decay = 5e-4;
  auto opt = optim::make_optimizer(oc, task->named_parameters(), 0.1);
  task->model().train();
  auto idx = torch::arange(batch, torch::kInt64);
  const int64_t micro_size = config::micro_batch_for_accumulation(batch, accum, 1);
  std::vector<torch::Tensor> micro;
  for (int64_t j = 0; j < accum; ++j)
    micro.push_back(idx.slice(0, j * micro_size, (j + 1) * micro_size));
  for (auto _ : state) {
    opt->optimizer().zero_grad();
    auto r = train::accumulate_gradients(*task, micro, std::nullopt);
    opt->step();
    benchmark::DoNotOptimize(r.loss);
  }
  state.counters["samples/s"] =
      benchmark::Counter(static_cast<double>(batch) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SmallResnetTrainStep)
    ->Args({128, 1})
    ->Args({512, 1})
    ->Args({512, 4})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The same step with per-layer statistics every `every` steps (issue target: every 10 steps adds
// under 2% to the step time). Each iteration is one step; statistics land on every 10th.
void BM_SmallResnetTrainStepLayerStats(benchmark::State& state) {
  at::set_num_threads(2);
  torch::manual_seed(0);
  const int64_t batch = 128, every = state.range(0);
  auto task = make_bench_task(32);
  config::OptimConfig oc;
  oc.name = "sgd";
  oc.weight_decay = 5e-4;
  auto params = task->named_parameters();
  auto opt = optim::make_optimizer(oc, params, 0.1);
  train::LayerStatsCollector collector(params);
  task->model().train();
  auto idx = torch::arange(batch, torch::kInt64);
  int64_t step = 0;
  size_t rows = 0;
  for (auto _ : state) {
    opt->optimizer().zero_grad();
    auto r = train::accumulate_gradients(*task, {idx}, std::nullopt);
    const bool log = every > 0 && step % every == 0;
    if (log) collector.before_update();
    opt->step();
    if (log) rows += collector.after_update(step, opt->last_trust_ratios()).size();
    ++step;
    benchmark::DoNotOptimize(r.loss);
  }
  state.counters["layer_rows"] = static_cast<double>(rows);
}
BENCHMARK(BM_SmallResnetTrainStepLayerStats)
    ->Arg(0)
    ->Arg(10)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(200);

}  // namespace

BENCHMARK_MAIN();
