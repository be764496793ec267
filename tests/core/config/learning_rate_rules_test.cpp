// Learning rates a float32 can hold (core/config/learning_rate.h): the peak after the scaling rule
// and a group's lr_scale, the final LR of the decay, and the weight decay, each refused at
// validation with its position instead of failing the run at its first update.
#include <gtest/gtest.h>

#include "core/config/learning_rate.h"
#include "core/config/limits.h"
#include "tests/core/config/config_test_util.h"

namespace batchlab::config {
namespace {

using testing::describe;
using testing::diagnostics_of;
using testing::doc;
using testing::expect_one;
using testing::parse_ok;

TEST(LearningRateRules, ThePeakIsTheBaseLrScaledByTheBatch) {
  OptimConfig optim;
  optim.base_lr = 0.1;
  optim.base_batch = 256;
  EXPECT_DOUBLE_EQ(peak_lr(optim, 1024), 0.1);
  optim.scaling = "linear";
  EXPECT_DOUBLE_EQ(peak_lr(optim, 1024), 0.4);
  optim.scaling = "sqrt";
  EXPECT_DOUBLE_EQ(peak_lr(optim, 1024), 0.2);
}

TEST(LearningRateRules, ABaseLrBeyondFloat32IsLocated) {
  expect_one(doc("optim", "base_lr = 1e40"), "optim.base_lr", 3, 11,
             "the learning rate is beyond the largest float32 (3.4e+38): the optimizer applies "
             "the learning rate to float32 parameters, and the run would fail at its first "
             "update; lower optim.base_lr");
  expect_one(doc("optim", "base_lr = 1e308"), "optim.base_lr", 3, 11, "largest float32");
  parse_ok(doc("optim", "base_lr = 3e38"));
}

TEST(LearningRateRules, ThePeakAfterScalingAndGroupsCounts) {
  // doc() sets batch.global = 256: 1e38 x 256 / 1 = 2.56e40.
  expect_one(doc("optim", "base_lr = 1e38\nscaling = \"linear\"\nbase_batch = 1"), "optim.base_lr",
             3, 11,
             "the peak learning rate, 1e+38 x 256 (linear: batch.global 256 / optim.base_batch "
             "1) = 2.56e+40, is beyond the largest float32");
  expect_one(doc("optim", "base_lr = 1e38\nscaling = \"sqrt\"\nbase_batch = 1"), "optim.base_lr", 3,
             11,
             "1e+38 x 16 (sqrt: the square root of batch.global 256 / optim.base_batch 1) = "
             "1.6e+39");
  // A group's lr_scale multiplies the LR of its parameters.
  expect_one(doc("optim", "base_lr = 1e38\n[[optim.groups]]\nmatch = \"ndim<2\"\nlr_scale = 10.0"),
             "optim.base_lr", 3, 11,
             "1e+38 x lr_scale 10 of optim.groups[0] = 1e+39, is beyond the largest float32");
  // Scaling down keeps a base LR beyond float32 usable: it is the applied LR that counts.
  parse_ok(doc("optim", "base_lr = 1e39\nscaling = \"linear\"\nbase_batch = 2560"));
}

TEST(LearningRateRules, TheFinalLrAndTheWeightDecayToo) {
  expect_one(doc("schedule", "end_lr = 1e39\ndecay = \"linear\""), "schedule.end_lr", 3, 10,
             "the final learning rate is beyond the largest float32");
  expect_one(doc("optim", "weight_decay = 1e40"), "optim.weight_decay", 3, 16,
             "the largest float32: the optimizer applies it to float32 parameters");
  expect_one(doc("optim", "[[optim.groups]]\nmatch = \"ndim<2\"\nweight_decay = 1e40"),
             "optim.groups[0].weight_decay", 5, 16, "the largest float32");
  parse_ok(doc("optim", "weight_decay = 1e30"));  // a float: the run diverges, a result
}

TEST(LearningRateRules, ReportedWithTheOtherProblems) {
  const auto both = diagnostics_of(doc("optim", "base_lr = 1e40\nmomentum = 2"));
  ASSERT_EQ(both.size(), 2u) << describe(both);
  EXPECT_EQ(both[0].key, "optim.base_lr") << describe(both);  // in the order of the file
  EXPECT_EQ(both[1].key, "optim.momentum") << describe(both);
}

}  // namespace
}  // namespace batchlab::config
