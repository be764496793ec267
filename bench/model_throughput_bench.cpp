// Training throughput of the two reference networks, forward + backward without an optimizer
// step (gradients set to none before each step, as Python's zero_grad(set_to_none=True)):
//   resnet50   3x128x128 images, batch 32, 1000 classes, cross-entropy    (models/registry.h)
//   bert_base  sequences of 128 tokens, batch 8, vocabulary 30,522, MLM cross-entropy at 15% of
//              the positions (154 of 1024), no NSP, dropout 0.1            (models/bert.h)
// bench/model_throughput.py runs the same two models in Python PyTorch (torchvision's resnet50
// and a plain-torch BERT of the same structure) with the same measurement; the target is
// C++ not slower than Python beyond the run-to-run spread of either (docs/performance.md).
//
// Side by side, same machine, same threads, one after the other (each line one command):
//   ./build/bench/model_throughput_bench --threads=2 --benchmark_repetitions=5
//   .venv/bin/python bench/model_throughput.py --threads 2 --repetitions 5
// Each repetition is one timed step after one untimed warm-up step per model and process (more
// steps per repetition: --benchmark_min_time=SECONDS here, --steps N there). Both end with lines
//   MODEL fwd+bwd: median X samples/s, min .., max .., spread S% (R repetitions, T threads);
//   process CPU C s/step
// where spread = (max - min) / median over the repetitions, followed by the median process CPU
// time per step (all threads): on a machine shared with other work, wall-clock rates drift with
// the load while CPU seconds per step stay comparable.
// --threads sets at::set_num_threads (default 2: every comparison states its thread count).
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_threads.h"
#include "models/bert.h"
#include "models/registry.h"

namespace {

using namespace batchlab;

constexpr int64_t kResNetBatch = 32, kResNetSide = 128, kResNetClasses = 1000;
constexpr int64_t kBertBatch = 8, kBertSeq = 128, kBertVocab = 30522;
constexpr double kMlmFraction = 0.15;

void clear_grads(torch::nn::Module& m) {
  for (auto& p : m.parameters()) p.mutable_grad().reset();
}

struct ResNetCase {
  std::shared_ptr<models::ImageClassifier> net;
  torch::Tensor images;  // float [32, 3, 128, 128]
  torch::Tensor labels;  // int64 [32]
  bool warm = false;

  void step() {
    clear_grads(*net);
    torch::nn::functional::cross_entropy(net->forward(images), labels).backward();
  }
  static ResNetCase& get() {
    static ResNetCase c = [] {
      torch::manual_seed(0);
      config::ModelConfig m;
      m.arch = "resnet50";
      ResNetCase r;
      r.net = models::make_image_classifier(m, 3, kResNetSide, kResNetSide, kResNetClasses);
      r.net->train();
      r.images = torch::randn({kResNetBatch, 3, kResNetSide, kResNetSide});
      r.labels = torch::randint(0, kResNetClasses, {kResNetBatch}, torch::kInt64);
      return r;
    }();
    return c;
  }
};

struct BertCase {
  std::shared_ptr<models::MaskedLanguageModel> net;
  torch::Tensor ids;        // int64 [8, 128]
  torch::Tensor segments;   // int64 [8, 128]: sentence A then B
  torch::Tensor positions;  // int64 [154]: flat MLM positions
  torch::Tensor targets;    // int64 [154]
  bool warm = false;

  void step() {
    clear_grads(*net);
    const models::MlmOutput out = net->forward(ids, segments, {}, positions);
    torch::nn::functional::cross_entropy(out.mlm_logits, targets).backward();
  }
  static BertCase& get() {
    static BertCase c = [] {
      torch::manual_seed(0);
      config::ModelConfig m;  // vocabulary 30,522, 512 positions, dropout 0.1, post-LN
      m.arch = "bert_base";
      BertCase b;
      b.net = models::make_bert(m, kBertVocab);
      b.net->train();
      b.ids = torch::randint(0, kBertVocab, {kBertBatch, kBertSeq}, torch::kInt64);
      b.segments = torch::zeros({kBertBatch, kBertSeq}, torch::kInt64);
      b.segments.slice(1, kBertSeq / 2).fill_(1);
      const int64_t tokens = kBertBatch * kBertSeq;
      const auto n = static_cast<int64_t>(kMlmFraction * static_cast<double>(tokens) + 0.5);
      b.positions = std::get<0>(torch::randperm(tokens, torch::kInt64).slice(0, 0, n).sort());
      b.targets = torch::randint(0, kBertVocab, {n}, torch::kInt64);
      return b;
    }();
    return c;
  }
};

template <typename Case>
void run(benchmark::State& state, Case& c, int64_t batch) {
  if (!c.warm) {  // first-touch allocations and oneDNN primitive creation stay out of the timing
    c.step();
    c.warm = true;
  }
  for (auto _ : state) c.step();
  state.counters["samples/s"] =
      benchmark::Counter(static_cast<double>(batch) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}

void BM_ResNet50_ForwardBackward(benchmark::State& state) {
  run(state, ResNetCase::get(), kResNetBatch);
}
BENCHMARK(BM_ResNet50_ForwardBackward)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

void BM_BertBase_ForwardBackward(benchmark::State& state) {
  run(state, BertCase::get(), kBertBatch);
}
BENCHMARK(BM_BertBase_ForwardBackward)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

// Console output as usual, plus every repetition's time per step (ms) by benchmark name.
class RecordingReporter : public benchmark::ConsoleReporter {
 public:
  RecordingReporter() : ConsoleReporter(OO_Tabular) {}  // no colour codes: output goes to docs
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.run_type == Run::RT_Iteration && !r.error_occurred) {
        times_[r.run_name.function_name].push_back(r.GetAdjustedRealTime());
        cpu_times_[r.run_name.function_name].push_back(r.GetAdjustedCPUTime());
      }
    }
  }
  // The line bench/model_throughput.py prints too.
  void print_summary(const char* name, const char* label, int64_t batch) const {
    auto it = times_.find(name);
    if (it == times_.end()) return;
    std::vector<double> rates;
    for (double ms : it->second) rates.push_back(static_cast<double>(batch) * 1000.0 / ms);
    std::sort(rates.begin(), rates.end());
    const double median = median_of(rates);
    std::printf(
        "%s fwd+bwd: median %.2f samples/s, min %.2f, max %.2f, spread %.1f%% (%zu "
        "repetitions, %d threads); process CPU %.2f s/step\n",
        label, median, rates.front(), rates.back(), 100.0 * (rates.back() - rates.front()) / median,
        rates.size(), at::get_num_threads(), median_of(cpu_times_.at(name)) / 1000.0);
  }

 private:
  static double median_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  }

  std::map<std::string, std::vector<double>> times_;
  std::map<std::string, std::vector<double>> cpu_times_;  // process CPU time per step, ms
};

}  // namespace

int main(int argc, char** argv) {
  batchlab::bench::take_threads_flag(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::printf("LibTorch %s, intra-op threads: %d\n", TORCH_VERSION, at::get_num_threads());

  RecordingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::printf("\n");
  reporter.print_summary("BM_ResNet50_ForwardBackward", "resnet50 3x128x128 batch 32",
                         kResNetBatch);
  reporter.print_summary("BM_BertBase_ForwardBackward", "bert_base seq 128 batch 8", kBertBatch);
  benchmark::Shutdown();
  return 0;
}
