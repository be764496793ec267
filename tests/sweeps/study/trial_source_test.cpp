// The stop request as the coordinator writes it (contract C2): one line "REASON STEP" in
// <run dir>/stop, replaced atomically by a later request.
#include "sweeps/study/trial_source.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/sweeps/sweep_cli_util.h"

namespace batchlab::sweeps::study {
namespace {

TEST(StudyStopFile, HoldsOneLineAndALaterRequestReplacesIt) {
  cli::testing::TempDir dir{"stopfile"};
  const RunLayout layout((dir.path / "runs").string());
  const std::string path = layout.stop_path("abc");
  EXPECT_EQ(path, layout.dir("abc") + "/stop");
  write_stop_request(path, StopRequest{"stopped_by_race", 42});
  EXPECT_EQ(sweeps::testing::read_file(path), "stopped_by_race 42\n");
  write_stop_request(path, StopRequest{"pruned", 17});
  EXPECT_EQ(sweeps::testing::read_file(path), "pruned 17\n");
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp")) << "written aside, then renamed";
}

}  // namespace
}  // namespace batchlab::sweeps::study
