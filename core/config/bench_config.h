// `batchlab bench`'s settings: which model, device, precision and batch geometry to time, checked
// here like every other user input (all problems at once, each naming the argument, a
// ConfigError), so the benchmark itself (experiments/bench/) only asserts them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/config/optim_config.h"

namespace batchlab::config {

struct BenchConfig {
  std::string model;                  // --model: a models-table name (required)
  std::string device = "cpu";         // --device: cpu | cuda | cuda:N
  std::string precision = "fp32";     // --precision: fp32 | bf16 (autocast, as train.precision)
  int64_t steps = 20;                 // --steps: timed optimizer steps
  int64_t warmup = 3;                 // --warmup: untimed steps before them
  int64_t batch = 32;                 // --batch: samples per optimizer step
  int64_t accum = 1;                  // --accum: micro-batches per step, batch / accum each
  bool channels_last = false;         // --channels-last: NHWC weights and images (image models)
  std::string optimizer = "sgd";      // --optimizer: an optim.name
  std::optional<int64_t> seq_len;     // --seq-len: tokens per sequence (text models; 128)
  std::optional<int64_t> image_size;  // --image-size: S of S x S images (image models; the
                                      // model's reference input, e.g. 224 for resnet50)
  std::optional<double> peak_tflops;  // --peak-tflops: the device's peak, for MFU
  int64_t threads = 0;                // --threads: intra-op threads; 0 = hardware concurrency
};

// The model names `--model` may take, by family (models::list_models(): core/config does not see
// the models table).
struct BenchModels {
  std::vector<std::string> image;
  std::vector<std::string> text;  // masked LMs (BERT): at most ModelConfig{}.max_seq_len tokens
  // Causal LMs (GPT-2), each with its reference context, the longest --seq-len it takes.
  std::map<std::string, int64_t> causal_lm;
};

inline constexpr int64_t kBenchDefaultSeqLen = 128;  // BERT pretraining's first phase

// Throws ConfigError listing every problem, each as `arguments: --steps = 0: must be >= 1`.
void check_bench(const BenchConfig& bench, const BenchModels& models);

// The optimizer `--optimizer NAME` stands for: optim.name = NAME with every other optim key at
// the default a config file would get (LAMB's eps and gradient clipping included).
OptimConfig bench_optim(const std::string& name);

}  // namespace batchlab::config
