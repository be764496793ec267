#include "core/train/eval_schedule.h"

#include <gtest/gtest.h>

namespace batchlab::train {
namespace {

TEST(LogSpacedSteps, AreTheDistinctCeilingsOfPowersOfTwo) {
  // n = 2: ceil(2^(k/2)) = 1, 2, 2, 3, 4, 6, 8, 12, 16, 23, 32, ...
  EXPECT_EQ(log_spaced_steps(2, 40), (std::vector<int64_t>{1, 2, 3, 4, 6, 8, 12, 16, 23, 32}));
  EXPECT_EQ(log_spaced_steps(1, 100), (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64}));
  // n = 3: 1, 1.26, 1.59, 2, 2.52, 3.17, 4, 5.04, 6.35, 8 -> ceil, repeats dropped.
  EXPECT_EQ(log_spaced_steps(3, 8), (std::vector<int64_t>{1, 2, 3, 4, 6, 7, 8}));
  EXPECT_TRUE(log_spaced_steps(4, 0).empty());
}

TEST(EvalSchedule, EvalsPerOctaveReplacesEvalEvery) {
  config::TrainConfig t;
  t.eval_every = 1.0;  // ignored
  t.evals_per_octave = 1;
  EvalSchedule s(t, 10);
  std::vector<int64_t> due;
  for (int64_t step = 1; step <= 300; ++step) {
    if (s.due(step)) due.push_back(step);
  }
  EXPECT_EQ(due, (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 128, 256}));
}

TEST(EvalSchedule, EvalEveryInEpochs) {
  config::TrainConfig t;
  t.eval_every = 0.5;
  EvalSchedule s(t, 8);
  EXPECT_FALSE(s.due(3));
  EXPECT_TRUE(s.due(4));
  EXPECT_TRUE(s.due(8));
}

}  // namespace
}  // namespace batchlab::train
