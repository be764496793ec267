// The committed Fashion-MNIST study (docs/data/fmnist_scaling_study.db) replayed on a virtual
// clock (sweeps/study/simulation.h) with 2, 8 and 64 workers: under spec order the replay runs
// exactly the recorded trials; the shortest-study order is never slower; a makespan is never
// below what the work and the workers allow. docs/sweeps.md has the numbers.
#include "sweeps/study/simulation.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "sweeps/expand.h"
#include "tests/sweeps/sweep_test_util.h"
#include "tests/temp_dir.h"
#include "tests/test_paths.h"

namespace batchlab::sweeps::study {
namespace {

TEST(StudySimulation, TheShortestStudyOrderIsNeverSlowerOnTheImageStudy) {
  test_support::TempDir dir;
  const std::string source = test_paths::source_dir();
  std::filesystem::copy_file(source + "/docs/data/fmnist_scaling_study.db", dir / "recorded.db");
  results::Store recorded(dir / "recorded.db");
  const SweepSpec spec = load_sweep_spec(source + "/sweeps/specs/fmnist_scaling_study.toml");
  const Plan plan = expand(spec, testing::plan_options());
  const StudyPlan study = plan_study(spec, plan, testing::plan_options());
  int run = 0;
  for (size_t workers : {2u, 8u, 64u}) {
    const auto old_order = simulate_study(study, recorded, dir / std::to_string(run++), workers,
                                          SchedulePolicy::spec_order);
    const auto new_order = simulate_study(study, recorded, dir / std::to_string(run++), workers,
                                          SchedulePolicy::shortest_study);
    EXPECT_EQ(old_order.trials, 85u) << workers;
    EXPECT_EQ(old_order.missing, 0u) << workers;
    // A trial missing from the record takes no time: the comparison holds only without any.
    EXPECT_EQ(new_order.trials, 85u) << workers;
    EXPECT_EQ(new_order.missing, 0u) << workers;
    EXPECT_EQ(old_order.cells, 23u);
    EXPECT_EQ(old_order.reached + old_order.censored, 23u);
    EXPECT_LE(new_order.makespan_s, old_order.makespan_s) << workers << " workers";
    for (const auto& r : {old_order, new_order}) {
      EXPECT_GE(r.makespan_s * static_cast<double>(workers), r.busy_s * (1 - 1e-9)) << workers;
      EXPECT_GT(r.makespan_s, 0.0);
    }
  }
}

}  // namespace
}  // namespace batchlab::sweeps::study
