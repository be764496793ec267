// core/atomic_file.h, the one way batchlab renames a file into place (checkpoints, stop requests,
// run configs, data indexes, exports): a reader sees the old file or the new one, never a part;
// a failed write leaves the target as it was and no temporary behind; several files appear
// together or not at all. (Kept beside the other tests of core/'s top-level files.)
#include "core/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/errors.h"
#include "tests/temp_dir.h"

// Every umask(2) call of this test binary: the definition at the end of this file takes the place
// of the C library's, so batchlab's own calls come here.
std::atomic<int> g_umask_calls{0};

namespace batchlab {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The umask, read (by a set and a reset) while nothing else runs.
mode_t current_umask_for_test() {
  const auto mask = static_cast<mode_t>(::syscall(SYS_umask, 0));
  ::syscall(SYS_umask, mask);
  return mask;
}

size_t entries(const fs::path& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

TEST(AtomicFile, WritesANewFileAndReplacesAnOldOneWholeWithNoTemporaryLeft) {
  test_support::TempDir dir("atomic");
  const fs::path path = dir.path / "a.txt";
  write_file_atomically(path.string(), "first");
  EXPECT_EQ(slurp(path), "first");
  std::ofstream(path, std::ios::app) << " and more";  // an old file, longer than the new one
  write_file_atomically(path.string(), "second");
  EXPECT_EQ(slurp(path), "second") << "replaced, not overwritten in place";
  EXPECT_EQ(entries(dir.path), 1u) << "no temporary left beside it";
}

TEST(AtomicFile, PartsAreWrittenInOrderAsOneFile) {
  test_support::TempDir dir("atomic");
  const fs::path path = dir.path / "framed.bin";
  const std::string payload(100000, 'p');
  write_file_atomically(path.string(), {"HEAD", std::string_view("\0\1", 2), payload});
  const std::string got = slurp(path);
  ASSERT_EQ(got.size(), 4 + 2 + payload.size());
  EXPECT_EQ(got.substr(0, 4), "HEAD");
  EXPECT_EQ(got[4], '\0');
  EXPECT_EQ(got[5], '\1');
  EXPECT_EQ(got.substr(6), payload);
}

TEST(AtomicFile, TheFileGetsThePlainNewFileModeNotTheTemporarys) {
  test_support::TempDir dir("atomic");
  const fs::path path = dir.path / "m.txt";
  const mode_t mask = ::umask(022);
  write_file_atomically(path.string(), "x");
  ::umask(mask);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST(AtomicFile, AMissingFolderIsBadInputAndLeavesNothing) {
  test_support::TempDir dir("atomic");
  const fs::path path = dir.path / "missing" / "a.txt";
  EXPECT_THROW(write_file_atomically(path.string(), "x"), InputError);
  EXPECT_EQ(entries(dir.path), 0u);
}

TEST(AtomicFile, FilesWrittenTogetherAppearTogetherOrNotAtAll) {
  test_support::TempDir dir("atomic");
  const fs::path a = dir.path / "a.txt";
  write_file_atomically(a.string(), "old a");
  {
    AtomicFiles files;
    files.write(a.string(), "new a");
    EXPECT_THROW(files.write((dir.path / "no" / "b.txt").string(), "b"), InputError);
  }
  EXPECT_EQ(slurp(a), "old a") << "the first file is not renamed when the second fails";
  EXPECT_EQ(entries(dir.path), 1u) << "and its temporary is gone";

  {
    AtomicFiles files;
    files.write(a.string(), "new a");
    files.write((dir.path / "b.txt").string(), "b");
    EXPECT_EQ(slurp(a), "old a") << "nothing renamed before commit";
    files.commit();
  }
  EXPECT_EQ(slurp(a), "new a");
  EXPECT_EQ(slurp(dir.path / "b.txt"), "b");
  EXPECT_EQ(entries(dir.path), 2u);
}

TEST(AtomicFile, ACommitThatFailsHalfWayPutsBackTheFilesItRenamed) {
  test_support::TempDir dir("atomic");
  const fs::path a = dir.path / "a.txt", b = dir.path / "b.txt", folder = dir.path / "c";
  write_file_atomically(a.string(), "old a");
  fs::create_directories(folder / "inside");  // a folder that is not empty: rename(2) fails
  AtomicFiles files;
  files.write(a.string(), "new a");
  files.write(b.string(), "new b");
  files.write(folder.string(), "c");
  EXPECT_THROW(files.commit(), InputError);
  EXPECT_EQ(slurp(a), "old a") << "a replaced file is put back";
  EXPECT_FALSE(fs::exists(b)) << "a new file is removed";
  EXPECT_TRUE(fs::is_directory(folder / "inside"));
  EXPECT_EQ(entries(dir.path), 2u) << "no temporary and no kept old file left";
}

TEST(AtomicFile, WritingNeverSetsTheProcesssUmaskThatOtherThreadsCreateFilesWith) {
  // umask(2) is read only by setting it: a round trip (umask(0), then back) leaves every other
  // thread a moment in which the files it creates get mode 0666. umask() below counts the calls.
  test_support::TempDir dir("atomic");
  const int before = g_umask_calls.load();
  for (int i = 0; i < 3; ++i) write_file_atomically((dir.path / "m.txt").string(), "x");
  EXPECT_EQ(g_umask_calls.load(), before);
  struct stat st {};
  ASSERT_EQ(::stat((dir.path / "m.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666u & ~current_umask_for_test());
}

TEST(AtomicFile, AReaderSeesTheOldFileOrTheNewOneNeverAPart) {
  test_support::TempDir dir("atomic");
  const fs::path path = dir.path / "big.bin";
  const std::string old_bytes(1 << 20, 'o'), new_bytes(1 << 20, 'n');
  write_file_atomically(path.string(), old_bytes);
  std::ifstream held(path, std::ios::binary);  // opened before the replacement
  write_file_atomically(path.string(), new_bytes);
  std::stringstream before;
  before << held.rdbuf();
  EXPECT_EQ(before.str(), old_bytes) << "a reader that had it open keeps reading the old file";
  EXPECT_EQ(slurp(path), new_bytes);
}

}  // namespace
}  // namespace batchlab

extern "C" mode_t umask(mode_t mask) noexcept {
  ++g_umask_calls;
  return static_cast<mode_t>(::syscall(SYS_umask, mask));
}
