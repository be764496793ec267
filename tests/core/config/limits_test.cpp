// Upper bounds on counts that allocate or feed derived arithmetic (core/config/limits.h), and
// numbers TOML cannot hold (1e400, 2^63): each refused at validation as `file:line:col: key =
// value: rule` with the fix, from the file and from --set alike.
#include "core/config/limits.h"

#include <gtest/gtest.h>

#include "core/config/bench_config.h"
#include "core/config/loader.h"
#include "tests/core/config/config_test_util.h"

namespace batchlab::config {
namespace {

using testing::describe;
using testing::diagnostics_of;
using testing::doc;
using testing::expect_one;
using testing::parse_ok;

// The one diagnostic `overrides` produce on a valid document.
Diagnostic from_set(const std::vector<std::string>& overrides) {
  LoadOptions options;
  options.overrides = overrides;
  const auto diagnostics = diagnostics_of(doc("model", "width = 8"), options);
  EXPECT_EQ(diagnostics.size(), 1u) << describe(diagnostics);
  return diagnostics.empty() ? Diagnostic{} : diagnostics.front();
}

TEST(Limits, TrainThreadsHasAnUpperBound) {
  // `--set train.threads=100000` started about 16,000 threads before failing.
  expect_one(doc("train", "threads = 100000"), "train.threads", 3, 11,
             "must be <= 1024; LibTorch starts one OS thread per intra-op thread");
  const Diagnostic d = from_set({"train.threads=100000"});
  EXPECT_EQ(d.file, "--set");
  EXPECT_EQ(d.key, "train.threads");
  EXPECT_EQ(d.value, "100000");
  EXPECT_NE(d.rule.find("must be <= 1024"), std::string::npos) << d.to_string();
  // The bound itself, 0 (one per core) and the lower bound's message are as before.
  parse_ok(doc("train", "threads = 1024"));
  parse_ok(doc("train", "threads = 0"));
  expect_one(doc("train", "threads = -1"), "train.threads", 3, 11, "must be >= 0");
}

TEST(Limits, LoaderWorkersAndQueuedBatchesHaveUpperBounds) {
  expect_one(doc("data", "workers = 100000"), "data.workers", 3, 11, "must be <= 256");
  expect_one(doc("data", "prefetch = 100000"), "data.prefetch", 3, 12, "must be <= 64");
  expect_one(doc("data", "prefetch = 0"), "data.prefetch", 3, 12, "must be > 0");
  parse_ok(doc("data", "workers = 256\nprefetch = 64"));
}

TEST(Limits, SampleCountsHaveAnUpperBound) {
  for (const char* key : {"train_size", "test_size", "val_size", "eval_train_samples"}) {
    const std::string line = std::string(key) + " = 9223372036854775807";
    expect_one(doc("data", line), std::string("data.") + key, 3,
               static_cast<int>(std::string(key).size()) + 4, "must be <= 1000000000000");
  }
}

TEST(Limits, StepAndEpochCountsHaveAnUpperBoundSoDerivedStepsCannotOverflow) {
  expect_one(doc("schedule", "steps = 9223372036854775807"), "schedule.steps", 3, 9,
             "must be <= 1000000000000");
  expect_one(doc("schedule", "epochs = 1e300"), "schedule.epochs", 3, 10, "must be <= 1000000");
  // Warmups in the other unit than the length, so the warmup-longer-than-the-run rule is silent.
  expect_one(doc("schedule", "warmup_steps = 9223372036854775807"), "schedule.warmup_steps", 3, 16,
             "must be <= 1000000000000");
  expect_one(doc("schedule", "steps = 100\nwarmup_epochs = 1e300"), "schedule.warmup_epochs", 4, 17,
             "must be <= 1000000");
  expect_one(doc("schedule", "decay = \"step\"\nmilestones = [1e300]"), "schedule.milestones", 4,
             14, "element 0 must be <= 1000000");
}

// A diagnostic about `key` saying "must be <= BOUND" (other rules may speak too: a batch of 2^23 is
// also larger than the data set).
void expect_bound(const std::string& table, const std::string& line, const std::string& key,
                  const std::string& bound) {
  const auto diagnostics = diagnostics_of(doc(table, line));
  bool found = false;
  for (const auto& d : diagnostics) {
    found = found || (d.key == key && d.rule.find("must be <= " + bound) != std::string::npos &&
                      d.line == 3);
  }
  EXPECT_TRUE(found) << line << "\n" << describe(diagnostics);
}

TEST(Limits, ModelImageSequenceAndBatchSizesHaveUpperBounds) {
  // Each allocates in proportion (a weight matrix, an embedding, a batch): a typo with three extra
  // zeros is refused here with its position, not by a failed allocation minutes into a run.
  expect_bound("model", "width = 4097", "model.width", "4096");
  expect_bound("model", "num_classes = 10000001", "model.num_classes", "10000000");
  expect_bound("model", "vocab_size = 10000001", "model.vocab_size", "10000000");
  expect_bound("model", "max_seq_len = 1048577", "model.max_seq_len", "1048576");
  expect_bound("data", "seq_len = 1048577", "data.seq_len", "1048576");
  expect_bound("data", "seq_len_phase2 = 1048577", "data.seq_len_phase2", "1048576");
  expect_bound("data", "image_size = 8193", "data.image_size", "8192");
  expect_bound("data", "eval_resize = 8193", "data.eval_resize", "8192");
  expect_bound("batch", "global = 8388609", "batch.global", "8388608");
  expect_bound("batch", "micro = 8388609", "batch.micro", "8388608");
  expect_bound("batch", "bn_group = 8388609", "batch.bn_group", "8388608");
  // At the bound nothing is said about the bound.
  parse_ok(doc("model", "width = 4096"));
  parse_ok(doc("model", "num_classes = 10000000"));
}

TEST(Limits, BenchThreadsHasTheSameBound) {
  BenchConfig b;
  b.model = "small_resnet";
  b.threads = 100000;
  try {
    check_bench(b, BenchModels{{"small_resnet"}, {}, {}});
    ADD_FAILURE() << "--threads 100000 passed";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--threads = 100000: must be <= 1024"), std::string::npos)
        << e.what();
  }
}

TEST(Limits, AFloatBeyondTheRangeOfDoublesIsOutOfRangeNotAString) {
  // In the file: at the value, naming the key, rather than a TOML syntax error past its end.
  expect_one(doc("optim", "base_lr = 1e400"), "optim.base_lr", 3, 11,
             "out of range for a float: a 64-bit float is finite only up to about 1.8e308");
  const auto diagnostics = diagnostics_of(doc("optim", "momentum = -1e400"));
  ASSERT_EQ(diagnostics.size(), 1u) << describe(diagnostics);
  EXPECT_EQ(diagnostics[0].to_string(),
            "test.toml:3:12: optim.momentum = -1e400: out of range for a float: a 64-bit float is "
            "finite only up to about 1.8e308 in magnitude; write a finite number");
  // From --set it was "expected a float, found a string".
  const Diagnostic d = from_set({"optim.base_lr=1e400"});
  EXPECT_EQ(d.file, "--set");
  EXPECT_EQ(d.key, "optim.base_lr");
  EXPECT_EQ(d.value, "1e400");
  EXPECT_NE(d.rule.find("out of range for a float"), std::string::npos) << d.to_string();
  EXPECT_NE(d.rule.find("(from --set 'optim.base_lr=1e400')"), std::string::npos) << d.to_string();
  EXPECT_EQ(d.rule.find("found a string"), std::string::npos) << d.to_string();
}

TEST(Limits, AnIntegerBeyondSixtyFourBitsIsOutOfRange) {
  expect_one(doc("train", "seed = 9223372036854775808"), "train.seed", 3, 8,
             "out of range for an integer: a 64-bit integer lies in [-9223372036854775808, "
             "9223372036854775807]");
  const Diagnostic d = from_set({"train.threads=99999999999999999999"});
  EXPECT_EQ(d.key, "train.threads");
  EXPECT_NE(d.rule.find("out of range for an integer"), std::string::npos) << d.to_string();
}

}  // namespace
}  // namespace batchlab::config
