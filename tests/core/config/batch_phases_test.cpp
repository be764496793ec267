// The phases of a batch schedule (core/config/batch_phases.h): where each batch starts in steps
// and examples, and where each update reads in the data order.
#include "core/config/batch_phases.h"

#include <gtest/gtest.h>

#include <vector>

namespace batchlab::config {
namespace {

TEST(BatchPhases, AFixedBatchIsTheFixedBatchOrder) {
  // 100 examples at batch 16: 6 steps per epoch, 4 examples dropped per epoch.
  const BatchPhases one({{0, 16}}, 0, 1, 100);
  EXPECT_FALSE(one.scheduled());
  for (int64_t step = 0; step < 40; ++step) {
    EXPECT_EQ(one.examples_before(step), step * 16);
    const DataPosition at = one.position(step);
    EXPECT_EQ(at.epoch, step / 6) << step;
    EXPECT_EQ(at.offset, (step % 6) * 16) << step;
    // The loader threads' rule for a fixed batch is the same answer.
    const DataPosition fixed = fixed_batch_position(one.final_geometry(), step);
    EXPECT_EQ(fixed.epoch, at.epoch) << step;
    EXPECT_EQ(fixed.offset, at.offset) << step;
  }
  EXPECT_EQ(one.steps_to_reach(0), 0);
  EXPECT_EQ(one.steps_to_reach(32), 2);
  EXPECT_EQ(one.steps_to_reach(33), 3);
}

TEST(BatchPhases, APointTakesEffectAtTheNextStepBoundary) {
  // 10 until 25 examples (3 steps: 30 seen), 20 until 100 (4 steps: 110 seen), then 40.
  const BatchPhases p({{0, 10}, {25, 20}, {100, 40}}, 0, 1, 100);
  ASSERT_TRUE(p.scheduled());
  ASSERT_EQ(p.phases().size(), 3u);
  EXPECT_EQ(p.phases()[1].start_step, 3);
  EXPECT_EQ(p.phases()[1].start_examples, 30);
  EXPECT_EQ(p.phases()[2].start_step, 7);
  EXPECT_EQ(p.phases()[2].start_examples, 110);
  const std::vector<int64_t> global = {10, 10, 10, 20, 20, 20, 20, 40, 40, 40};
  const std::vector<int64_t> seen = {0, 10, 20, 30, 50, 70, 90, 110, 150, 190, 230};
  for (int64_t step = 0; step < 10; ++step) {
    EXPECT_EQ(p.geometry(step).global, global[step]) << step;
  }
  for (int64_t step = 0; step <= 10; ++step) EXPECT_EQ(p.examples_before(step), seen[step]);
  EXPECT_EQ(p.steps_to_reach(25), 3);
  EXPECT_EQ(p.steps_to_reach(30), 3);
  EXPECT_EQ(p.steps_to_reach(31), 4);
  EXPECT_EQ(p.steps_to_reach(110), 7);
  EXPECT_EQ(p.steps_to_reach(200), 10);
  EXPECT_EQ(p.final_geometry().global, 40);
}

TEST(BatchPhases, TheDataOrderReadsOnAcrossBatchChangesAndDropsWhatDoesNotFit) {
  const BatchPhases p({{0, 10}, {25, 20}, {100, 40}}, 0, 1, 100);
  // Epoch 0: 0-30 at batch 10, 30-90 at batch 20; 90-110 does not fit, so epoch 1 starts (10
  // dropped); 0-20 at 20, then 20-60, 60-100 at 40; epoch 2 from 0.
  const std::vector<DataPosition> want = {{0, 0},  {0, 10}, {0, 20}, {0, 30}, {0, 50},
                                          {0, 70}, {1, 0},  {1, 20}, {1, 60}, {2, 0}};
  for (int64_t step = 0; step < 10; ++step) {
    EXPECT_EQ(p.position(step).epoch, want[step].epoch) << step;
    EXPECT_EQ(p.position(step).offset, want[step].offset) << step;
    // Every batch lies inside its epoch.
    EXPECT_LE(p.position(step).offset + p.geometry(step).global, 100) << step;
  }
}

TEST(BatchPhases, APhaseOfNoUpdateIsSkipped) {
  // The 40 point comes before the 20 phase has taken a step: the update at 10 examples takes 40.
  const BatchPhases p({{0, 10}, {5, 20}, {8, 40}}, 0, 1, 100);
  EXPECT_EQ(p.phases()[2].start_step, 1);
  EXPECT_EQ(p.phase_index(0), 0u);
  EXPECT_EQ(p.phase_index(1), 2u);
  EXPECT_EQ(p.examples_before(2), 50);
  EXPECT_EQ(p.position(1).offset, 10);
}

TEST(BatchPhases, EachPhaseHasTheGeometryRulesGeometry) {
  // micro 8 on 2 devices: accumulation 1, 2 and 4 as the batch grows.
  const BatchPhases p({{0, 16}, {64, 32}, {256, 64}}, 8, 2, 1000);
  EXPECT_EQ(p.phases()[0].geometry.accum, 1);
  EXPECT_EQ(p.phases()[1].geometry.accum, 2);
  EXPECT_EQ(p.phases()[2].geometry.accum, 4);
  EXPECT_EQ(p.phases()[2].geometry.micro, 8);
}

}  // namespace
}  // namespace batchlab::config
