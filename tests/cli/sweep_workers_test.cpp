// The default number of `sweep run` workers: cores / the jobs' train.threads, said out loud.
#include "cli/sweep_workers.h"

#include <gtest/gtest.h>

namespace batchlab::cli {
namespace {

sweeps::Plan plan_with_threads(std::initializer_list<int64_t> threads) {
  sweeps::Plan plan;
  for (int64_t t : threads) {
    sweeps::Job job;
    job.threads = t;
    plan.jobs.push_back(job);
  }
  return plan;
}

TEST(SweepWorkers, OneThreadJobsFillEveryCore) {
  const auto choice = choose_workers(std::nullopt, plan_with_threads({1, 1, 1}), 0, 2);
  EXPECT_EQ(choice.workers, 2u);
  EXPECT_EQ(choice.describe(), "2 workers: 2 cores / train.threads = 1");
  EXPECT_EQ(choose_workers(std::nullopt, plan_with_threads({2, 2}), 0, 8).workers, 4u);
}

TEST(SweepWorkers, NeverFewerThanOne) {
  const auto choice = choose_workers(std::nullopt, plan_with_threads({4}), 0, 2);
  EXPECT_EQ(choice.workers, 1u);
  EXPECT_EQ(choice.describe(), "1 worker: 2 cores / train.threads = 4");
}

TEST(SweepWorkers, ThreadsZeroMeansEachJobTakesTheMachine) {
  const auto choice = choose_workers(std::nullopt, plan_with_threads({1, 0}), 0, 16);
  EXPECT_EQ(choice.workers, 1u);
  EXPECT_NE(choice.reason.find("train.threads = 0"), std::string::npos) << choice.reason;
}

TEST(SweepWorkers, TheLargestJobSetsThePaceWhenThreadsAreSwept) {
  const auto choice = choose_workers(std::nullopt, plan_with_threads({1, 4, 2}), 0, 8);
  EXPECT_EQ(choice.workers, 2u);
  EXPECT_EQ(choice.reason, "8 cores / train.threads = 4 (the largest of the jobs')");
}

TEST(SweepWorkers, ExplicitWorkersAndDevicesWin) {
  const auto plan = plan_with_threads({1});
  EXPECT_EQ(choose_workers(3, plan, 0, 2).workers, 3u);
  EXPECT_EQ(choose_workers(3, plan, 0, 2).describe(), "3 workers: as asked (--workers)");
  EXPECT_EQ(choose_workers(std::nullopt, plan, 4, 2).workers, 4u);
}

}  // namespace
}  // namespace batchlab::cli
