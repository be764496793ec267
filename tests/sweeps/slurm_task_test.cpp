// CheckpointWatch (sweeps/slurm_task.h): what `sweep slurm-task` costs the shared filesystem while
// its job runs. It listed the checkpoint folder every 200 ms (issue 45); now a look is one stat of
// the folder, and the folder is listed only after it changed.
#include "sweeps/slurm_task.h"

#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "tests/temp_dir.h"

namespace batchlab::sweeps {
namespace {

namespace fs = std::filesystem;

void write_checkpoint(const fs::path& dir, const std::string& name) {
  fs::create_directories(dir);
  std::ofstream(dir / (name + ".tmp")) << "weights";
  fs::rename(dir / (name + ".tmp"), dir / name);  // as the trainer writes one
}

TEST(CheckpointWatch, SeesANewCheckpointAndNotTheOnesThereAtTheStart) {
  test_support::TempDir dir("ckptwatch");
  const fs::path folder = dir.path / "checkpoints";
  write_checkpoint(folder, "ckpt-00000008.pt");
  CheckpointWatch watch(folder.string(), std::chrono::milliseconds(0));
  EXPECT_EQ(watch.newest(), "ckpt-00000008.pt");
  EXPECT_FALSE(watch.changed()) << "there at the start: not new";
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a later modification time
  write_checkpoint(folder, "ckpt-00000016.pt");
  EXPECT_TRUE(watch.changed());
  EXPECT_EQ(watch.newest(), "ckpt-00000016.pt");
  EXPECT_FALSE(watch.changed()) << "reported once";
}

TEST(CheckpointWatch, AFolderThatAppearsLaterIsWatchedToo) {
  test_support::TempDir dir("ckptwatch");
  const fs::path folder = dir.path / "checkpoints";
  CheckpointWatch watch(folder.string(), std::chrono::milliseconds(0));
  EXPECT_EQ(watch.newest(), "");
  EXPECT_FALSE(watch.changed());
  write_checkpoint(folder, "ckpt-00000004.pt");
  EXPECT_TRUE(watch.changed());
  EXPECT_EQ(watch.newest(), "ckpt-00000004.pt");
}

// The cost: 1,000 looks at an unchanged folder (200 s of a running task) list it not once more.
TEST(CheckpointWatch, AnUnchangedFolderIsNotListedAgain) {
  test_support::TempDir dir("ckptwatch");
  const fs::path folder = dir.path / "checkpoints";
  write_checkpoint(folder, "ckpt-00000008.pt");
  CheckpointWatch watch(folder.string(), std::chrono::milliseconds(0));
  const int64_t at_start = watch.listings();
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(watch.changed());
  EXPECT_EQ(watch.listings(), at_start);
}

// A filesystem with coarse timestamps: a checkpoint renamed in within the tick of the last listing
// leaves the folder's time as it was. Within the settle time after a change it is still found.
TEST(CheckpointWatch, ACheckpointThatLeavesTheFoldersTimeAsItWasIsFoundWhileSettling) {
  test_support::TempDir dir("ckptwatch");
  const fs::path folder = dir.path / "checkpoints";
  write_checkpoint(folder, "ckpt-00000008.pt");
  CheckpointWatch watch(folder.string(), std::chrono::seconds(60));
  const auto time = fs::last_write_time(folder);
  write_checkpoint(folder, "ckpt-00000016.pt");
  fs::last_write_time(folder, time);  // the same tick
  EXPECT_TRUE(watch.changed());
  EXPECT_EQ(watch.newest(), "ckpt-00000016.pt");
}

}  // namespace
}  // namespace batchlab::sweeps
