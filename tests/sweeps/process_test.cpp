// Job processes and locks: environment and log of a spawned job, exit statuses (a crash is a
// signal), a program that cannot start, and flock locks that a child keeps and death releases.
#include "sweeps/process.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <fstream>

#include "core/errors.h"
#include "sweeps/run_layout.h"
#include "tests/cli/cli_runner.h"

namespace batchlab::sweeps {
namespace {

using cli::testing::TempDir;

std::string read(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(ChildProcess, GetsItsEnvironmentAndAppendsToItsLog) {
  TempDir dir("proc");
  const std::string log = dir.file("log.txt", "earlier attempt\n");
  SpawnOptions options;
  options.argv = {"/bin/sh", "-c", "echo device=$CUDA_VISIBLE_DEVICES; echo oops >&2; exit 3"};
  options.env = {{"CUDA_VISIBLE_DEVICES", "5"}};
  options.log_path = log;
  auto child = ChildProcess::spawn(options);
  const ExitStatus status = child.wait();
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.describe(), "exit code 3");
  EXPECT_EQ(read(log), "earlier attempt\ndevice=5\noops\n");
  EXPECT_EQ(tail_lines(log, 2), "device=5\noops");
}

TEST(ChildProcess, ACrashIsASignal) {
  SpawnOptions options;
  options.argv = {"/bin/sh", "-c", "kill -ABRT $$"};
  auto child = ChildProcess::spawn(options);
  const ExitStatus status = child.wait();
  EXPECT_TRUE(status.signaled);
  EXPECT_EQ(status.describe(), "killed by signal 6 (SIGABRT)");
  EXPECT_EQ(child.poll()->code, SIGABRT);  // reaped once, remembered
}

TEST(ChildProcess, AProgramThatCannotStartThrows) {
  SpawnOptions options;
  options.argv = {"/nonexistent/batchlab", "train"};
  EXPECT_THROW(ChildProcess::spawn(options), Error);
}

TEST(FileLock, IsExclusiveKeptByTheChildAndReleasedByItsDeath) {
  TempDir dir("lock");
  const std::string path = dir.file("job.lock");
  {
    auto lock = FileLock::try_acquire(path);
    ASSERT_TRUE(lock.has_value());
    EXPECT_TRUE(lock_held(path));
    EXPECT_FALSE(FileLock::try_acquire(path).has_value());
    lock->describe("pid 1: test\n");
    EXPECT_EQ(lock_description(path), "pid 1: test");  // trailing whitespace trimmed
  }
  EXPECT_FALSE(lock_held(path));
  // A child that inherits the locked descriptor keeps the lock after the parent lets go.
  auto lock = FileLock::try_acquire(path);
  ASSERT_TRUE(lock.has_value());
  SpawnOptions options;
  options.argv = {"/bin/sleep", "1"};
  options.keep_fd = lock->fd();
  auto child = ChildProcess::spawn(options);
  lock.reset();
  EXPECT_TRUE(lock_held(path));
  child.send(SIGKILL);
  child.wait();
  EXPECT_FALSE(lock_held(path));
}

TEST(RunLayout, WritesConfigsAtomicallyAndOnlyWhenChanged) {
  TempDir dir("layout");
  RunLayout layout((dir.path / "runs" / "s").string());
  layout.write_config("abc", "schema_version = 1\n");
  EXPECT_EQ(read(layout.config_path("abc")), "schema_version = 1\n");
  EXPECT_EQ(layout.records_path("abc"), (dir.path / "runs" / "s" / "abc" / "records.db").string());
  layout.write_config("abc", "schema_version = 1\n[train]\n");
  EXPECT_EQ(read(layout.config_path("abc")), "schema_version = 1\n[train]\n");
}

}  // namespace
}  // namespace batchlab::sweeps
