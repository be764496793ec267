// The Slurm job-id files of a study (sweeps/slurm_job_files.h): what they hold goes to squeue and
// scancel, so only job ids are taken, and only a bounded read of the file (issue 45).
#include "sweeps/slurm_job_files.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <string>

#include "core/errors.h"
#include "tests/temp_dir.h"

namespace batchlab::sweeps {
namespace {

std::string write(const test_support::TempDir& dir, const std::string& bytes) {
  const std::string path = (dir.path / "slurm_job").string();
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string refusal(const std::function<void()>& read) {
  try {
    read();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(SlurmJobFiles, JobIdsAreRead) {
  test_support::TempDir dir("job-ids");
  EXPECT_EQ(read_slurm_job_file((dir.path / "missing").string()), "");
  EXPECT_EQ(read_slurm_job_file(write(dir, "")), "");
  EXPECT_EQ(read_slurm_job_file(write(dir, "4242\n")), "4242");
  EXPECT_EQ(read_job_id_lines(write(dir, "100\n\n101\r\n 205 \n")),
            (std::vector<std::string>{"100", "101", "205"}));
  EXPECT_TRUE(read_job_id_lines((dir.path / "missing").string()).empty());
}

// Before, `in >> id` took the first word, whatever it was: "--me" would have gone to scancel as
// an option and cancelled every job of the user.
TEST(SlurmJobFiles, AnythingButAJobIdIsRefusedNamingTheFileAndLine) {
  test_support::TempDir dir("job-ids");
  const std::string path = write(dir, "--me\n");
  EXPECT_NE(
      refusal([&] { read_slurm_job_file(path); }).find(path + ":1: '--me' is not a Slurm job id"),
      std::string::npos);
  EXPECT_NE(refusal([&] { read_job_id_lines(write(dir, "100\n101 -u\n")); }).find(":2: '101 -u'"),
            std::string::npos);
  EXPECT_NE(refusal([&] { read_slurm_job_file(write(dir, "100 101")); }).find("not a Slurm job id"),
            std::string::npos);
  EXPECT_NE(refusal([&] { read_slurm_job_file(write(dir, std::string(21, '7'))); }).find("not a"),
            std::string::npos);
  EXPECT_NE(refusal([&] { read_slurm_job_file(write(dir, "12\x1b[2J")); }).find("'12?[2J'"),
            std::string::npos);
}

// Before, a file without whitespace was read whole into one string, whatever its size.
TEST(SlurmJobFiles, AFileLargerThanTheBoundIsRefusedWithoutReadingIt) {
  test_support::TempDir dir("job-ids");
  const std::string path = write(dir, std::string(kMaxJobIdFileBytes + 1, '1'));
  EXPECT_NE(refusal([&] { read_job_id_lines(path); }).find("more than 1048576 bytes"),
            std::string::npos);
}

}  // namespace
}  // namespace batchlab::sweeps
