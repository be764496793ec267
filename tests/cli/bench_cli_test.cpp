// `batchlab bench` through the real binary on the CPU: the acceptance command's table, the JSON
// the docs and scripts parse, a text model, and bad arguments (exit 2, naming the argument).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>

#include "tests/cli/cli_runner.h"

namespace batchlab::cli {
namespace {

using testing::run_batchlab;

// The number after `label` at the start of a line of the table ("  samples/s    3047.6").
double table_number(const std::string& output, const std::string& label) {
  std::smatch m;
  const std::regex line("\\n  " + label + " +([0-9.eE+-]+)");
  if (!std::regex_search(output, m, line)) return -1.0;
  return std::stod(m[1]);
}

TEST(BenchCli, SmallResnetFiveStepsPrintsItsThroughput) {
  const auto r = run_batchlab("bench --model small_resnet --steps 5", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::regex_search(
      r.output, std::regex("^bench small_resnet on cpu, fp32, optimizer sgd, [0-9]+ threads?\n")))
      << r.output;
  EXPECT_NE(r.output.find("  input        1x28x28, 10 classes"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("  batch        32 samples = 1 micro-batch x 32"), std::string::npos);
  // Five timed steps, the three default warm-up steps apart from them.
  EXPECT_NE(r.output.find("  steps        5 timed (steady clock), after 3 warm-up steps"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("  step time    median "), std::string::npos);
  EXPECT_GT(table_number(r.output, "samples/s"), 0.0) << r.output;
  EXPECT_NE(r.output.find("FLOP per sample (3 x forward, as `batchlab models`)"),
            std::string::npos);
  EXPECT_GT(table_number(r.output, "achieved"), 0.0) << r.output;
  EXPECT_NE(r.output.find("  MFU          n/a (pass --peak-tflops)"), std::string::npos);
  EXPECT_EQ(r.output.find("tokens/s"), std::string::npos);  // an image model
}

TEST(BenchCli, ThreadsPastTwiceTheCoresAreWarnedAboutOnStderr) {
  const auto cores = static_cast<int>(std::thread::hardware_concurrency());
  if (cores <= 0) GTEST_SKIP() << "the hardware concurrency is unknown here";
  const std::string threads = std::to_string(2 * cores + 1);
  const auto r = run_batchlab(
      "bench --model small_resnet --steps 1 --warmup 0 --batch 4 --format json --threads " +
      threads);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: --threads = " + threads + ": more than 2 x the " +
                          std::to_string(cores) + " cores of this machine"),
            std::string::npos)
      << r.output;
  // On stderr: the JSON on stdout stays JSON.
  const auto json_only = run_batchlab(
      "bench --model small_resnet --steps 1 --warmup 0 --batch 4 --format json --threads " +
          threads,
      false);
  EXPECT_TRUE(nlohmann::json::accept(json_only.output)) << json_only.output;
}

TEST(BenchCli, JsonHasEveryFieldAndCountsOnlyTheTimedSteps) {
  const auto r = run_batchlab(
      "bench --model small_resnet --steps 5 --warmup 2 --batch 16 --accum 2 --threads 1 "
      "--peak-tflops 0.25 --format json",
      false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j.at("model"), "small_resnet");
  EXPECT_EQ(j.at("steps"), 5);
  EXPECT_EQ(j.at("warmup_steps"), 2);
  EXPECT_EQ(j.at("step_times_s").size(), 5u);  // the warm-up is not timed
  EXPECT_EQ(j.at("batch"), 16);
  EXPECT_EQ(j.at("micro_batch"), 8);
  EXPECT_EQ(j.at("accum"), 2);
  EXPECT_EQ(j.at("timing"), "steady clock");
  EXPECT_GT(j.at("samples_per_s").get<double>(), 0.0);
  EXPECT_GT(j.at("median_step_s").get<double>(), 0.0);
  EXPECT_TRUE(j.at("tokens_per_s").is_null());
  EXPECT_GT(j.at("train_flops_per_sample").get<int64_t>(), 0);
  EXPECT_DOUBLE_EQ(j.at("mfu").get<double>(), j.at("achieved_tflops").get<double>() / 0.25);
  EXPECT_EQ(j.at("peak_source"), "--peak-tflops");
}

TEST(BenchCli, ATinyBertReportsTokensPerSecond) {
  const auto r = run_batchlab(
      "bench --model bert_tiny --steps 2 --warmup 1 --batch 4 --seq-len 32 --optimizer lamb "
      "--threads 1 --format json",
      false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j.at("family"), "text");
  EXPECT_EQ(j.at("steps"), 2);
  EXPECT_NEAR(j.at("tokens_per_s").get<double>(), 32.0 * j.at("samples_per_s").get<double>(),
              1e-6 * j.at("tokens_per_s").get<double>());
  EXPECT_TRUE(j.at("mfu").is_null());
}

TEST(BenchCli, ATinyGpt2IsOfferedAndCountsEveryToken) {
  const auto r = run_batchlab(
      "bench --model gpt2_tiny --steps 1 --warmup 0 --batch 2 --seq-len 16 --optimizer adamw "
      "--threads 1 --format json",
      false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j.at("family"), "causal_lm");
  EXPECT_EQ(j.at("input"), "16 tokens, 50257-token vocabulary");
  EXPECT_NEAR(j.at("tokens_per_s").get<double>(), 16.0 * j.at("samples_per_s").get<double>(),
              1e-6 * j.at("tokens_per_s").get<double>());
}

TEST(BenchCli, BadArgumentsExitTwoNamingTheArgument) {
  struct Case {
    const char* args;
    const char* message;
  };
  for (const Case& c : {
           Case{"--model resnt50", "--model = resnt50: must be one of"},
           Case{"--model small_resnet --steps 0", "--steps = 0: must be >= 1"},
           Case{"--model small_resnet --device tpu", "--device = tpu: must be cpu, cuda"},
           Case{"--model small_resnet --device cuda:99", "--device = cuda:99: "},
           Case{"--model small_resnet --precision fp16", "--precision = fp16"},
           Case{"--model small_resnet --steps many", "--steps = many: not an integer"},
           Case{"--model small_resnet --format yaml", "--format yaml: not a format"},
           Case{"", "--model: missing"},
       }) {
    const auto r = run_batchlab(std::string("bench ") + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args << "\n" << r.output;
  }
}

}  // namespace
}  // namespace batchlab::cli
