// A submission's task list (sweeps/task_list.h), read by every array task on a compute node: a
// line is a run folder the task writes under, so it is checked first (issue 45).
#include "sweeps/task_list.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <string>

#include "core/errors.h"
#include "tests/temp_dir.h"

namespace batchlab::sweeps {
namespace {

std::string write(const test_support::TempDir& dir, const std::string& bytes) {
  const std::string path = (dir.path / "x.tasks").string();
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string refusal(const std::string& path, size_t index) {
  try {
    read_task_line(path, index);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(TaskList, TheIndexCountsNonEmptyLines) {
  test_support::TempDir dir("tasks");
  const std::string path = write(dir, "/runs/s/aaaa\n\n/runs/s/bbbb\n");
  EXPECT_EQ(read_task_line(path, 0).run_id, "aaaa");
  const TaskLine second = read_task_line(path, 1);
  EXPECT_EQ(second.run_dir, "/runs/s/bbbb");
  EXPECT_EQ(second.run_id, "bbbb");
  EXPECT_NE(refusal(path, 2).find("task 2 is not in " + path + " (2 tasks)"), std::string::npos);
  EXPECT_NE(refusal((dir.path / "missing").string(), 0).find("cannot read the task list"),
            std::string::npos);
}

// Before, a line was taken as it came: a run id of "" or "..", a relative folder (the node's
// working directory), a line of any length held whole in memory.
TEST(TaskList, ALineThatIsNoRunFolderIsRefusedNamingIt) {
  test_support::TempDir dir("tasks");
  const auto refused = [&](const std::string& line) {
    return refusal(write(dir, "/runs/s/aaaa\n" + line + "\n"), 1);
  };
  EXPECT_NE(refused("runs/s/bbbb")
                .find(":2: task 1: 'runs/s/bbbb' is not a run folder (not an "
                      "absolute path)"),
            std::string::npos);
  EXPECT_NE(refused("/runs/s/..").find("its last part is not a run id"), std::string::npos);
  EXPECT_NE(refused("/runs/s/").find("its last part is not a run id"), std::string::npos);
  EXPECT_NE(refused("/runs/s/b\x1b[2Jb").find("control byte"), std::string::npos);
  EXPECT_NE(refused("/" + std::string(kMaxTaskLine, 'a')).find("longer than 4096 bytes"),
            std::string::npos);
  // The other lines are not this task's business.
  EXPECT_EQ(read_task_line(write(dir, "/runs/s/aaaa\nnot a folder\n"), 0).run_id, "aaaa");
}

}  // namespace
}  // namespace batchlab::sweeps
