// Batch-aware rules (core/config/batch_rules.h): beta2 by a half-life in examples with a floor,
// weight decay proportional to the batch, resolved into each run's config.
#include "core/config/batch_rules.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/config/canonical.h"
#include "core/config/loader.h"
#include "tests/core/config/config_test_util.h"

namespace batchlab::config {
namespace {

using testing::expect_one;
using testing::expect_same_config;
using testing::parse_ok;

// A document with [batch] global = `global` and the [optim] lines given.
std::string optim_doc(int64_t global, const std::string& optim_lines) {
  return "schema_version = 1\n[optim]\n" + optim_lines +
         "\n[batch]\nglobal = " + std::to_string(global) + "\n[schedule]\nepochs = 1\n";
}

TEST(BatchRules, Beta2KeepsItsHalfLifeInExamples) {
  // 0.999 at batch 32 is a half-life of 32 ln 2 / -ln 0.999 = 22,166 examples.
  const double h = 32.0 * std::log(2.0) / -std::log(0.999);
  EXPECT_NEAR(beta2_for_batch(h, 0.0, 32), 0.999, 1e-12);
  EXPECT_NEAR(beta2_for_batch(h, 0.0, 64), 0.999 * 0.999, 1e-12);
  // The example: 0.13 at 64k without a floor; the floor caps it.
  EXPECT_NEAR(beta2_for_batch(h, 0.0, 65536), std::pow(0.999, 2048.0), 1e-12);
  EXPECT_NEAR(beta2_for_batch(h, 0.0, 65536), 0.129, 1e-3);
  EXPECT_EQ(beta2_for_batch(h, 0.95, 65536), 0.95);
}

TEST(BatchRules, WeightDecayGrowsWithTheBatch) {
  EXPECT_DOUBLE_EQ(weight_decay_for_batch(0.01, 256, 256), 0.01);
  EXPECT_DOUBLE_EQ(weight_decay_for_batch(0.01, 256, 4096), 0.16);
}

TEST(BatchRules, ResolvedIntoTheConfigPerBatchAndReadBackUnchanged) {
  const std::string lines =
      "name = \"adamw\"\nbase_batch = 256\nbeta2_half_life = 100000.0\nbeta2_floor = 0.5\n"
      "weight_decay_scaling = \"linear\"\nbase_weight_decay = 0.01";
  for (int64_t global : {256, 1024, 262144}) {
    const ExperimentConfig c = parse_ok(optim_doc(global, lines));
    EXPECT_EQ(c.optim.betas[0], 0.9);
    EXPECT_DOUBLE_EQ(c.optim.betas[1],
                     std::max(0.5, std::pow(0.5, static_cast<double>(global) / 1e5)));
    EXPECT_DOUBLE_EQ(c.optim.weight_decay, 0.01 * static_cast<double>(global) / 256.0);
    // The canonical TOML holds the resolved values, and reads back to the same config.
    const std::string text = to_canonical_toml(c);
    EXPECT_NE(text.find("weight_decay = " + format_float(c.optim.weight_decay)), std::string::npos)
        << text;
    expect_same_config(parse_ok(text), c);
  }
  // The floor binds at the largest batch.
  EXPECT_EQ(parse_ok(optim_doc(262144, lines)).optim.betas[1], 0.5);
}

TEST(BatchRules, AGivenValueMustBeTheRulesOwn) {
  expect_one(optim_doc(512, "name = \"adamw\"\nbeta2_half_life = 1000.0\nbetas = [0.9, 0.999]"),
             "optim.betas", 5, 9,
             "beta2 is set by optim.beta2_half_life = 1000.0 examples (floor 0.9): 0.9 at "
             "batch.global = 512; give betas = [0.9, 0.9] or leave optim.betas out");
  expect_one(optim_doc(512,
                       "name = \"adamw\"\nbase_batch = 256\nweight_decay_scaling = "
                       "\"linear\"\nbase_weight_decay = 0.01\nweight_decay = 0.01"),
             "optim.weight_decay", 7, 16,
             "base_weight_decay 0.01 x batch.global 512 / base_batch 256 = 0.02");
  expect_one(optim_doc(512, "name = \"adamw\"\nweight_decay_scaling = \"linear\""),
             "optim.weight_decay_scaling", 4, 24, "needs optim.base_weight_decay > 0");
  expect_one(optim_doc(512, "name = \"sgd\"\nbeta2_half_life = 1000.0"), "optim.beta2_half_life", 4,
             19, "optim.name = \"sgd\" has no beta2");
}

TEST(BatchRules, ConfigsWithoutThemKeepTheirCanonicalText) {
  const ExperimentConfig c = parse_ok(optim_doc(512, "name = \"adamw\"\nweight_decay = 0.05"));
  EXPECT_EQ(c.optim.weight_decay, 0.05);
  const std::string text = to_canonical_toml(c);
  for (const char* key :
       {"beta2_half_life", "beta2_floor", "weight_decay_scaling", "base_weight_decay"}) {
    EXPECT_EQ(text.find(key), std::string::npos) << key;
  }
}

}  // namespace
}  // namespace batchlab::config
