// The one batch-geometry rule (core/config/batch_geometry.h) that validation, the run length's
// rules, the sweep plan and the trainer call.
#include "core/config/batch_geometry.h"

#include <gtest/gtest.h>

#include <limits>

#include "core/errors.h"

namespace batchlab::config {
namespace {

TEST(BatchGeometryRule, MicroZeroIsTheGlobalBatchOverTheWorld) {
  EXPECT_EQ(micro_batch(256, 0, 1), 256);
  EXPECT_EQ(micro_batch(256, 0, 4), 64);
  EXPECT_EQ(micro_batch(256, 32, 4), 32);
  EXPECT_EQ(micro_batch(250, 0, 4), 0) << "no whole share per device";
  EXPECT_EQ(micro_batch(256, 0, 0), 0);
}

TEST(BatchGeometryRule, AccumulationIsWholeOrNothing) {
  EXPECT_EQ(accumulation(256, 32, 1), 8);
  EXPECT_EQ(accumulation(256, 32, 4), 2);
  EXPECT_EQ(accumulation(256, 0, 4), 1);
  EXPECT_EQ(accumulation(100, 32, 1), std::nullopt);
  EXPECT_EQ(accumulation(256, 48, 4), std::nullopt) << "64 per device, not a multiple of 48";
  EXPECT_EQ(accumulation(250, 0, 4), std::nullopt);
  EXPECT_EQ(accumulation(0, 0, 1), std::nullopt);
  EXPECT_EQ(accumulation(256, 32, 0), std::nullopt);
  // No world x micro product that could overflow.
  const int64_t huge = std::numeric_limits<int64_t>::max() / 2 + 1;
  EXPECT_EQ(accumulation(huge, huge, 4), std::nullopt);
}

// `batchlab bench --accum K` states the split by its accumulation count: the micro-batch is the
// per-device batch over K, and accumulation() gives K back for it.
TEST(BatchGeometryRule, TheMicroBatchOfAnAccumulationCountIsItsInverse) {
  EXPECT_EQ(micro_batch_for_accumulation(256, 4, 1), 64);
  EXPECT_EQ(micro_batch_for_accumulation(256, 4, 2), 32);
  EXPECT_EQ(micro_batch_for_accumulation(256, 1, 1), 256);
  EXPECT_EQ(accumulation(256, micro_batch_for_accumulation(256, 4, 2), 2), 4);
  EXPECT_EQ(micro_batch_for_accumulation(250, 4, 1), 0) << "250 samples in 4 micro-batches";
  EXPECT_EQ(micro_batch_for_accumulation(256, 4, 3), 0) << "no whole share per device";
  EXPECT_EQ(micro_batch_for_accumulation(256, 0, 1), 0);
  EXPECT_EQ(micro_batch_for_accumulation(0, 4, 1), 0);
  EXPECT_EQ(micro_batch_for_accumulation(256, 4, 0), 0);
}

TEST(BatchGeometryRule, AnEpochHoldsTheFullBatchesAndDropsTheRest) {
  EXPECT_EQ(steps_per_epoch(1000, 128), 7);
  EXPECT_EQ(steps_per_epoch(100, 128), 0);
  EXPECT_EQ(steps_per_epoch(1000, 0), 0);
  const BatchGeometry g = make_batch_geometry(128, 32, 2, 1000);
  EXPECT_EQ(g.micro, 32);
  EXPECT_EQ(g.accum, 2);
  EXPECT_EQ(g.world, 2);
  EXPECT_EQ(g.steps_per_epoch, 7);
  EXPECT_EQ(g.dropped_per_epoch, 1000 - 7 * 128);
}

TEST(BatchGeometryRule, TheStepsToSeeSomeExamplesRoundUpToAWholeUpdate) {
  EXPECT_EQ(steps_to_see(300000, 4096), 74);
  EXPECT_EQ(steps_to_see(300000, 2048), 147);
  EXPECT_EQ(steps_to_see(4096, 4096), 1);
  EXPECT_EQ(steps_to_see(4097, 4096), 2);
  EXPECT_EQ(steps_to_see(0, 64), 0);
  EXPECT_EQ(steps_to_see(-5, 64), 0);
  EXPECT_EQ(steps_to_see(100, 0), 0);
  const int64_t most = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(steps_to_see(most, 2), most / 2 + 1) << "no intermediate overflows";
}

TEST(BatchGeometryRule, EachDeviceTakesMicroTimesAccumulationExamplesPerUpdate) {
  EXPECT_EQ(examples_per_device(make_batch_geometry(128, 32, 2, 1000)), 64);
  EXPECT_EQ(examples_per_device(make_batch_geometry(128, 0, 2, 1000)), 64);
  EXPECT_EQ(examples_per_device(make_batch_geometry(128, 16, 1, 1000)), 128);
  EXPECT_EQ(batch_multiple(32, 2), 64);
  EXPECT_EQ(batch_multiple(0, 4), 4) << "micro 0: one micro-batch of global / world per device";
}

TEST(BatchGeometryRule, ABatchLargerThanTheDataOrNotDividingIsRefused) {
  EXPECT_THROW(make_batch_geometry(2048, 0, 1, 1000), InputError);
  EXPECT_ANY_THROW(make_batch_geometry(100, 32, 1, 1000));
}

}  // namespace
}  // namespace batchlab::config
