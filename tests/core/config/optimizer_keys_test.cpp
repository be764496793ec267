// The keys of Muon, Schedule-Free AdamW and Lion: their defaults resolve to the reference
// packages', each key read by one optimizer is an error under another, and a canonical config
// that does not use them is unchanged (run ids of older configs stay).
#include <gtest/gtest.h>

#include <array>
#include <string>

#include "core/config/canonical.h"
#include "core/config/loader.h"
#include "tests/core/config/config_test_util.h"

namespace batchlab::config {
namespace {

using testing::doc;
using testing::expect_one;
using testing::expect_same_config;
using testing::parse_ok;

TEST(OptimizerKeys, DefaultsFollowTheReferencePackages) {
  const ExperimentConfig muon = parse_ok(doc("optim", "name = \"muon\""));
  EXPECT_EQ(muon.optim.momentum, 0.95);  // torch.optim.Muon
  EXPECT_TRUE(muon.optim.nesterov);
  EXPECT_EQ(muon.optim.ns_steps, 5);
  EXPECT_EQ(muon.optim.ns_dtype, "bf16");
  EXPECT_EQ(muon.optim.muon_adjust_lr, "original");
  const ExperimentConfig lion = parse_ok(doc("optim", "name = \"lion\""));
  EXPECT_EQ(lion.optim.betas, (std::array<double, 2>{0.9, 0.99}));  // lion-pytorch
  const ExperimentConfig sf = parse_ok(doc("optim", "name = \"schedulefree_adamw\""));
  EXPECT_EQ(sf.optim.betas, (std::array<double, 2>{0.9, 0.999}));
  EXPECT_EQ(sf.optim.weight_lr_power, 2.0);
  EXPECT_EQ(sf.optim.poly_power, 0.0);
  // The others keep what they always had.
  const ExperimentConfig sgd = parse_ok(doc("optim", "name = \"sgd\""));
  EXPECT_EQ(sgd.optim.momentum, 0.9);
  EXPECT_FALSE(sgd.optim.nesterov);
  EXPECT_EQ(sgd.optim.betas, (std::array<double, 2>{0.9, 0.999}));
  EXPECT_TRUE(parse_ok(doc("optim", "name = \"nesterov\"")).optim.nesterov);
  // A value given wins over the derived one.
  const ExperimentConfig set = parse_ok(
      doc("optim", "name = \"muon\"\nmomentum = 0.9\nnesterov = false\nns_dtype = \"fp32\""));
  EXPECT_EQ(set.optim.momentum, 0.9);
  EXPECT_FALSE(set.optim.nesterov);
  EXPECT_EQ(set.optim.ns_dtype, "fp32");
}

TEST(OptimizerKeys, EachIsAnErrorUnderAnotherOptimizer) {
  expect_one(doc("optim", "ns_steps = 3"), "optim.ns_steps", 3, 12,
             "is read by optim.name = \"muon\" only (this config has \"sgd\"); remove the key");
  expect_one(doc("optim", "ns_dtype = \"fp32\""), "optim.ns_dtype", 3, 12,
             "is read by optim.name = \"muon\" only");
  expect_one(doc("optim", "muon_adjust_lr = \"match_rms_adamw\""), "optim.muon_adjust_lr", 3, 18,
             "is read by optim.name = \"muon\" only");
  expect_one(doc("optim", "weight_lr_power = 1.0"), "optim.weight_lr_power", 3, 19,
             "is read by optim.name = \"schedulefree_adamw\" only");
  expect_one(doc("optim", "name = \"lion\"\npoly_power = 1.0"), "optim.poly_power", 4, 14,
             "is read by optim.name = \"schedulefree_adamw\" only (this config has \"lion\")");
}

TEST(OptimizerKeys, BadValuesNameTheKeyAndTheFix) {
  expect_one(doc("optim", "name = \"muon\"\nns_dtype = \"fp16\""), "optim.ns_dtype", 4, 12,
             "must be one of bf16 or fp32");
  expect_one(doc("optim", "name = \"muon\"\nns_steps = 100"), "optim.ns_steps", 4, 12,
             "torch.optim.Muon's limit");
  expect_one(doc("optim", "name = \"muon\"\nns_coefficients = [3.4, -4.7]"),
             "optim.ns_coefficients", 4, 19, "must hold 3 numbers (a, b, c)");
  expect_one(doc("optim", "name = \"muon\"\nmuon_adjust_lr = \"rms\""), "optim.muon_adjust_lr", 4,
             18, "must be one of original, match_rms_adamw or spectral_unclamped");
  expect_one(doc("optim", "name = \"schedulefree_adamw\"\nbetas = [0.0, 0.999]"), "optim.betas", 4,
             9, "beta1 must be > 0 for schedulefree_adamw");
}

TEST(OptimizerKeys, CanonicalTomlOmitsThemAtTheirDefaultsAndRoundTrips) {
  const std::string plain = to_canonical_toml(parse_ok(doc("optim", "name = \"adamw\"")));
  for (const char* key : {"ns_steps", "ns_coefficients", "ns_dtype", "muon_adjust_lr", "poly_power",
                          "weight_lr_power"}) {
    EXPECT_EQ(plain.find(key), std::string::npos) << key << " in\n" << plain;
  }
  const ExperimentConfig muon =
      parse_ok(doc("optim",
                   "name = \"muon\"\nns_steps = 4\nns_coefficients = [3.0, -4.0, 2.0]\n"
                   "ns_dtype = \"fp32\"\nmuon_adjust_lr = \"match_rms_adamw\""));
  expect_same_config(parse_ok(to_canonical_toml(muon)), muon);
  const ExperimentConfig sf = parse_ok(
      doc("optim", "name = \"schedulefree_adamw\"\npoly_power = 1.0\nweight_lr_power = 0.5"));
  expect_same_config(parse_ok(to_canonical_toml(sf)), sf);
}

}  // namespace
}  // namespace batchlab::config
