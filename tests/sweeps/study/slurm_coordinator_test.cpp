// The coordinator's working copy of the study database (sweeps/study/slurm_coordinator.h). It was
// named by pid alone (issue 45): two coordinators with one pid shared it, and the first to end
// removed the other's copy.
#include "sweeps/study/slurm_coordinator.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "results/store.h"
#include "tests/sweeps/tmpdir_at.h"
#include "tests/temp_dir.h"

namespace batchlab::sweeps::study {
namespace {

namespace fs = std::filesystem;

TEST(PublishedDatabase, TwoCoordinatorsOfOnePidKeepTheirCopiesApart) {
  test_support::TempDir dir("pubdb");
  const testing::TmpdirAt tmpdir(dir.path);
  const std::string shared = (dir.path / "results" / "study.db").string();
  {
    auto first = std::make_unique<PublishedDatabase>(shared);
    const PublishedDatabase second(shared);
    EXPECT_NE(first->local(), second.local());
    results::RunRow row;
    row.run_id = "r1";
    results::Store(second.local()).upsert_run(row);
    first.reset();  // the first coordinator ends
    EXPECT_TRUE(fs::exists(second.local())) << "the other's working copy is left alone";
    second.publish();
    EXPECT_TRUE(fs::exists(shared));
  }
}

}  // namespace
}  // namespace batchlab::sweeps::study
