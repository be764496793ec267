// ScratchDir (sweeps/scratch_dir.h): node-local folders that two processes never share. The
// coordinator's working copy was named by pid alone (issue 45): two coordinators with one pid (on
// two hosts sharing a TMPDIR, or after pid reuse) shared it, and the first to end removed the
// other's database.
#include "sweeps/scratch_dir.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tests/sweeps/tmpdir_at.h"
#include "tests/temp_dir.h"

namespace batchlab::sweeps {
namespace {

namespace fs = std::filesystem;

using testing::TmpdirAt;

TEST(ScratchDir, TwoFoldersOfOneProcessAreApartAndEachGoesWithItsObject) {
  test_support::TempDir root("scratch");
  TmpdirAt tmpdir(root.path);
  std::string first_path;
  {
    const ScratchDir first("coordinator");
    const ScratchDir second("coordinator");
    first_path = first.path();
    EXPECT_NE(first.path(), second.path()) << "one pid, two folders";
    EXPECT_EQ(fs::path(first.path()).parent_path(), root.path);
    EXPECT_TRUE(fs::is_directory(first.path()));
    const std::string name = fs::path(first.path()).filename().string();
    EXPECT_NE(name.find("batchlab-coordinator-"), std::string::npos) << name;
    EXPECT_NE(name.find("-" + std::to_string(::getpid()) + "-"), std::string::npos) << name;
    std::ofstream(fs::path(second.path()) / "records.db") << "x";
  }
  EXPECT_FALSE(fs::exists(first_path));
  EXPECT_TRUE(fs::is_empty(root.path)) << "both removed, with what was in them";
}

TEST(ScratchDir, AnUnwritableRootIsAnErrorNamingIt) {
  TmpdirAt tmpdir("/nonexistent/batchlab-scratch-root");
  try {
    const ScratchDir dir("task0");
    FAIL() << "made " << dir.path();
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/batchlab-scratch-root"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace batchlab::sweeps
