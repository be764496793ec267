// The benchmark on the CPU with tiny models: timed steps counted apart from the warm-up, samples/s
// from the step times, FLOPs from the models table, MFU only against a known peak.
#include "experiments/bench/throughput.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/errors.h"
#include "models/gpt2_config.h"
#include "models/registry.h"

namespace batchlab::experiments {
namespace {

config::BenchConfig tiny_image() {
  config::BenchConfig b;
  b.model = "small_resnet";
  b.steps = 3;
  b.warmup = 2;
  b.batch = 8;
  return b;
}

TEST(Bench, TimesTheRequestedStepsAfterTheWarmup) {
  const BenchResult r = run_bench(tiny_image());
  EXPECT_EQ(r.step_s.size(), 3u);  // the 2 warm-up steps are not among them
  EXPECT_EQ(r.warmup_steps, 2);
  EXPECT_EQ(r.timing, "steady clock");
  EXPECT_EQ(r.device, "cpu");
  for (double s : r.step_s) EXPECT_GT(s, 0.0);
  const double total = std::accumulate(r.step_s.begin(), r.step_s.end(), 0.0);
  EXPECT_NEAR(r.samples_per_s, 8.0 * 3.0 / total, 1e-9 * r.samples_per_s);
  EXPECT_GE(r.median_step_s, *std::min_element(r.step_s.begin(), r.step_s.end()));
  EXPECT_LE(r.median_step_s, *std::max_element(r.step_s.begin(), r.step_s.end()));
  EXPECT_TRUE(std::isfinite(r.last_loss));
  EXPECT_EQ(r.tokens_per_s, 0.0);
}

TEST(Bench, FlopsAreTheModelsTablesAndMfuNeedsAPeak) {
  config::BenchConfig b = tiny_image();
  b.image_size = 32;
  const BenchResult r = run_bench(b);
  config::ModelConfig m;
  m.arch = "small_resnet";
  EXPECT_EQ(r.train_flops_per_sample, models::training_flops_per_sample(m, 1, 32, 32, 10));
  EXPECT_EQ(r.input, "1x32x32, 10 classes");
  EXPECT_NEAR(r.achieved_tflops, r.train_flops_per_sample * r.samples_per_s / 1e12,
              1e-12 * r.achieved_tflops);
  EXPECT_FALSE(r.mfu.has_value());  // the CPU has no table entry
  b.peak_tflops = 0.5;
  const BenchResult with_peak = run_bench(b);
  ASSERT_TRUE(with_peak.mfu.has_value());
  EXPECT_DOUBLE_EQ(*with_peak.mfu, with_peak.achieved_tflops / 0.5);
  EXPECT_EQ(with_peak.peak_source, "--peak-tflops");
}

TEST(Bench, AccumulationSplitsTheBatchIntoMicroBatches) {
  config::BenchConfig b = tiny_image();
  b.accum = 4;
  b.optimizer = "lars";
  b.channels_last = true;
  const BenchResult r = run_bench(b);
  EXPECT_EQ(r.batch, 8);
  EXPECT_EQ(r.accum, 4);
  EXPECT_EQ(r.micro_batch, 2);
  EXPECT_TRUE(std::isfinite(r.last_loss));
}

TEST(Bench, TextModelsCountTokensUnderBf16Autocast) {
  config::BenchConfig b;
  b.model = "bert_tiny";
  b.steps = 2;
  b.warmup = 1;
  b.batch = 4;
  b.seq_len = 32;
  b.precision = "bf16";
  b.optimizer = "lamb";
  const BenchResult r = run_bench(b);
  EXPECT_EQ(r.family, "text");
  EXPECT_EQ(r.tokens_per_sample, 32);
  EXPECT_DOUBLE_EQ(r.tokens_per_s, 32.0 * r.samples_per_s);
  config::ModelConfig m;
  m.arch = "bert_tiny";
  EXPECT_EQ(r.train_flops_per_sample, models::estimate_masked_lm_cost(m, 32).training_flops);
  EXPECT_TRUE(std::isfinite(r.last_loss));
}

TEST(Bench, CausalLmsCountEveryTokenAndPriceTheModelsTablesCost) {
  config::BenchConfig b;
  b.model = "gpt2_tiny";
  b.steps = 2;
  b.warmup = 1;
  b.batch = 2;
  b.seq_len = 16;
  b.optimizer = "adamw";
  const BenchResult r = run_bench(b);
  EXPECT_EQ(r.family, "causal_lm");
  EXPECT_EQ(r.input, "16 tokens, 50257-token vocabulary");
  EXPECT_EQ(r.tokens_per_sample, 16);
  config::ModelConfig m;
  m.arch = "gpt2_tiny";
  EXPECT_EQ(r.train_flops_per_sample,
            models::estimate_causal_lm_cost(m, 16, models::kGpt2Vocabulary).training_flops);
  // Every step trains on the same 2 sequences: the loss falls from about log(50257) = 10.8.
  EXPECT_TRUE(std::isfinite(r.last_loss));
  EXPECT_LT(r.last_loss, std::log(50257.0) + 0.5);
}

TEST(Bench, ACudaDeviceOnACpuMachineIsAnInputErrorNamingTheArgument) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "a GPU is present";
  config::BenchConfig b = tiny_image();
  b.device = "cuda";
  try {
    run_bench(b);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--device = cuda: ", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace batchlab::experiments
