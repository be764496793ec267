// `batchlab bench`: training throughput of one model on synthetic data, on any device.
//
// A step is what the trainer does for one global batch (core/train/accumulation.h and the
// optimizer wrapper of core/optim/factory.h): release the gradients, forward + backward over
// `accum` micro-batches of batch / accum samples (under bf16 autocast with --precision bf16),
// then the optimizer step. Left out: data loading (the batches are device-resident random
// examples made once, experiments/bench/synthetic_tasks.h), metrics, evaluation, checkpoints.
// `warmup` steps run first and are not timed (allocator growth, cuDNN autotuning); each of the
// `steps` timed steps is measured with train::StepTimer: CUDA events on a GPU, a steady clock on
// the CPU.
//
// FLOPs per sample are those `batchlab models` reports (models/registry.h ModelCost): 2 per
// multiply-accumulate of the convolutions and matrix products, a training step = 3 x forward
// (the backward pass as twice the forward), the optimizer step not counted. MFU = those FLOPs x
// samples/s / the device's dense peak (--peak-tflops, or experiments/bench/peak_flops.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config/bench_config.h"

namespace batchlab::experiments {

struct BenchResult {
  // What ran.
  std::string model;
  std::string family;  // "image" or "text"
  std::string input;   // "3x224x224, 1000 classes" or "128 tokens, 30522-token vocabulary"
  std::string device;  // "cpu", "cuda:0"
  std::string device_name;
  std::string precision;
  std::string optimizer;
  std::string timing;  // "cuda events" or "steady clock"
  bool channels_last = false;
  int64_t batch = 0;  // samples per step = micro_batch x accum
  int64_t micro_batch = 0;
  int64_t accum = 0;
  int64_t tokens_per_sample = 0;  // sequence length of text models; 0 for images
  int64_t warmup_steps = 0;       // run before the timed steps, not timed
  int64_t threads = 0;            // intra-op threads

  // Measured.
  std::vector<double> step_s;  // each timed step, seconds
  double median_step_s = 0.0;
  double samples_per_s = 0.0;  // batch x timed steps / their summed time
  double tokens_per_s = 0.0;   // samples_per_s x tokens_per_sample (0 for images)
  double last_loss = 0.0;      // the last step's mean loss (a sanity check: finite)

  // Model FLOPs.
  int64_t train_flops_per_sample = 0;
  double achieved_tflops = 0.0;       // train_flops_per_sample x samples_per_s / 1e12
  std::optional<double> peak_tflops;  // given or from the table; nullopt: unknown
  std::string peak_source;            // "--peak-tflops" or the table entry
  std::optional<double> mfu;          // achieved / peak, in [0, 1] for a correct peak
};

// `bench` must have passed config::check_bench. Throws InputError when the machine cannot do what
// it asks (a CUDA device on a CPU build, --device naming a missing GPU, --precision bf16 on a GPU
// without bfloat16) or the model cannot take the input size.
BenchResult run_bench(const config::BenchConfig& bench);

}  // namespace batchlab::experiments
