// The order pending study trials start in (issue 24): spec order as before, and the shortest-study
// order (the longest chain of expected work first, then the longer trial, then spec order).
#include "sweeps/study/schedule.h"

#include <gtest/gtest.h>

namespace batchlab::sweeps::study {
namespace {

TEST(StudySchedule, SpecOrderIsCellThenDecisionOrder) {
  const std::vector<PendingTrial> pending = {{2, 0, 9e9, 9e9}, {1, 1, 0, 0}, {1, 2, 0, 0}};
  EXPECT_EQ(next_trial(pending, SchedulePolicy::spec_order), 1u);
  EXPECT_TRUE(starts_before(pending[1], pending[2], SchedulePolicy::spec_order));
  EXPECT_FALSE(next_trial({}, SchedulePolicy::spec_order).has_value());
}

TEST(StudySchedule, ShortestStudyStartsTheLongestChainFirst) {
  // Cell 5 sits at the bottom of a line with more work above it than cell 0's line.
  const std::vector<PendingTrial> pending = {{0, 0, 3e6, 1e6}, {5, 1, 8e6, 1e6}};
  EXPECT_EQ(next_trial(pending, SchedulePolicy::shortest_study), 1u);
  EXPECT_EQ(next_trial(pending, SchedulePolicy::spec_order), 0u);
  // Equal chains: the longer trial first; then spec order.
  EXPECT_TRUE(starts_before({7, 0, 5e6, 2e6}, {1, 0, 5e6, 1e6}, SchedulePolicy::shortest_study));
  EXPECT_TRUE(starts_before({1, 0, 5e6, 1e6}, {1, 1, 5e6, 1e6}, SchedulePolicy::shortest_study));
  EXPECT_FALSE(starts_before({1, 1, 5e6, 1e6}, {1, 0, 5e6, 1e6}, SchedulePolicy::shortest_study));
}

}  // namespace
}  // namespace batchlab::sweeps::study
