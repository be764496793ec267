// `batchlab bench`'s arguments are checked like a config file: every problem at once, each naming
// the argument, the value and what it must be.
#include "core/config/bench_config.h"

#include <gtest/gtest.h>

#include <string>

#include "core/config/loader.h"
#include "core/errors.h"

namespace batchlab::config {
namespace {

BenchModels models() {
  return {{"small_resnet", "resnet50"}, {"bert_tiny", "bert_large"}, {{"gpt2_small", 1024}}};
}

BenchConfig valid() {
  BenchConfig b;
  b.model = "small_resnet";
  return b;
}

// The diagnostics of check_bench, each as `arguments: --key = value: rule`.
std::vector<std::string> problems(const BenchConfig& b) {
  try {
    check_bench(b, models());
  } catch (const ConfigError& e) {
    std::vector<std::string> out;
    for (const auto& d : e.diagnostics()) out.push_back(d.to_string());
    return out;
  }
  return {};
}

bool has_problem(const std::vector<std::string>& list, const std::string& text) {
  for (const auto& p : list) {
    if (p.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(BenchConfig, DefaultsWithAModelAreValid) {
  EXPECT_TRUE(problems(valid()).empty());
  BenchConfig text = valid();
  text.model = "bert_tiny";
  text.seq_len = 64;
  text.precision = "bf16";
  text.optimizer = "lamb";
  EXPECT_TRUE(problems(text).empty());
}

TEST(BenchConfig, EveryProblemIsReportedAtOnceNamingItsArgument) {
  BenchConfig b = valid();
  b.model = "resnt50";
  b.device = "tpu";
  b.precision = "fp16";
  b.optimizer = "adamx";
  b.steps = 0;
  b.warmup = -1;
  b.accum = 0;
  b.peak_tflops = 0.0;
  const auto list = problems(b);
  EXPECT_EQ(list.size(), 8u);
  EXPECT_TRUE(has_problem(list, "arguments: --model = resnt50: must be one of"));
  EXPECT_TRUE(has_problem(list, "did you mean resnet50?"));
  EXPECT_TRUE(has_problem(list, "--device = tpu: must be cpu, cuda or cuda:N"));
  EXPECT_TRUE(has_problem(list, "--precision = fp16: must be one of fp32 or bf16"));
  EXPECT_TRUE(has_problem(list, "--optimizer = adamx: must be one of"));
  EXPECT_TRUE(has_problem(list, "--steps = 0: must be >= 1"));
  EXPECT_TRUE(has_problem(list, "--warmup = -1: must be >= 0"));
  EXPECT_TRUE(has_problem(list, "--accum = 0: must be >= 1"));
  EXPECT_TRUE(has_problem(list, "--peak-tflops = 0: must be > 0"));
}

TEST(BenchConfig, AMissingModelSaysHowToPickOne) {
  BenchConfig b;
  const auto list = problems(b);
  ASSERT_EQ(list.size(), 1u);
  EXPECT_TRUE(has_problem(list, "--model: missing; name an architecture of `batchlab models`"));
}

TEST(BenchConfig, TheBatchMustSplitIntoTheMicroBatches) {
  BenchConfig b = valid();
  b.batch = 30;
  b.accum = 4;
  EXPECT_TRUE(has_problem(problems(b), "--batch = 30: must be a multiple of --accum = 4"));
  b.batch = 32;
  EXPECT_TRUE(problems(b).empty());
}

TEST(BenchConfig, InputSizesBelongToTheirFamily) {
  BenchConfig image = valid();
  image.seq_len = 128;
  EXPECT_TRUE(has_problem(problems(image), "--seq-len = 128: small_resnet is an image model"));
  BenchConfig text = valid();
  text.model = "bert_tiny";
  text.image_size = 224;
  text.channels_last = true;
  const auto list = problems(text);
  EXPECT_TRUE(has_problem(list, "--image-size = 224: bert_tiny is a text model"));
  EXPECT_TRUE(has_problem(list, "--channels-last: bert_tiny is a text model"));
  text = valid();
  text.model = "bert_tiny";
  text.seq_len = 513;
  EXPECT_TRUE(has_problem(problems(text), "--seq-len = 513: must be in [1, 512] (bert_tiny's"));
  image = valid();
  image.image_size = 0;
  EXPECT_TRUE(has_problem(problems(image), "--image-size = 0: must be > 0"));
}

TEST(BenchConfig, ACausalLmTakesSequencesUpToItsReferenceContext) {
  BenchConfig gpt = valid();
  gpt.model = "gpt2_small";
  gpt.seq_len = 1024;
  EXPECT_TRUE(problems(gpt).empty());
  gpt.seq_len = 1025;
  gpt.channels_last = true;
  const auto list = problems(gpt);
  EXPECT_TRUE(has_problem(list, "--seq-len = 1025: must be in [1, 1024] (gpt2_small's"));
  EXPECT_TRUE(has_problem(list, "--channels-last: gpt2_small is a text model"));
}

TEST(BenchConfig, AnOptimizerNameGetsTheDefaultsAConfigFileWould) {
  for (const std::string name : {"sgd", "nesterov", "adamw", "lars", "lamb"}) {
    const std::string file =
        "schema_version = 1\n[batch]\nglobal = 32\n[schedule]\nepochs = 1\n"
        "[optim]\nname = \"" +
        name + "\"\n";
    const OptimConfig from_file = parse_experiment(file, "x.toml").optim;
    const OptimConfig bench = bench_optim(name);
    EXPECT_EQ(bench.name, name);
    EXPECT_EQ(bench.eps, from_file.eps) << name;
    EXPECT_EQ(bench.grad_clip, from_file.grad_clip) << name;
    EXPECT_EQ(bench.nesterov, from_file.nesterov) << name;
  }
  EXPECT_EQ(bench_optim("lamb").eps, 1e-6);  // LAMB's reference defaults, not Adam's
  EXPECT_EQ(bench_optim("lamb").grad_clip, 1.0);
}

}  // namespace
}  // namespace batchlab::config
