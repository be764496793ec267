// The questions batchlab asks Slurm, against fake `sbatch` and `squeue` programs first on PATH:
// which of a submission's options the cluster refuses (sbatch --test-only), and what the queue
// holds (squeue). The real cluster runs them in slurm_test.sh and slurm_study_test.sh.
#include "sweeps/slurm_check.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include "core/errors.h"
#include "tests/temp_dir.h"

namespace batchlab::sweeps {
namespace {

// PATH with `dir` first while alive.
class FakeSlurm {
 public:
  FakeSlurm() : old_path_(std::getenv("PATH") ? std::getenv("PATH") : "") {
    ::setenv("PATH", (dir_.path.string() + ":" + old_path_).c_str(), 1);
  }
  ~FakeSlurm() { ::setenv("PATH", old_path_.c_str(), 1); }
  void program(const std::string& name, const std::string& body) {
    const std::string path = (dir_.path / name).string();
    std::ofstream(path) << "#!/bin/sh\n" << body;
    ::chmod(path.c_str(), 0755);
  }

 private:
  test_support::TempDir dir_{"fakeslurm"};
  std::string old_path_;
};

// An sbatch that refuses a partition other than `debug`, and GPUs (the cluster has none); every
// call's options are appended to `log` so the test sees what was asked.
const char* kSbatch =
    "script=\"$2\"\n"
    "grep '^#SBATCH' \"$script\" | tr '\\n' ' ' >> \"$FAKE_SBATCH_LOG\"; echo >> "
    "\"$FAKE_SBATCH_LOG\"\n"
    "if grep -q -- '--partition=' \"$script\" && ! grep -q -- '--partition=debug' \"$script\"; "
    "then\n"
    "  echo 'sbatch: error: invalid partition specified'; exit 1; fi\n"
    "if grep -q -- '--gres=gpu' \"$script\"; then\n"
    "  echo 'sbatch: error: Invalid generic resource (gres) specification'; exit 1; fi\n"
    "echo 'sbatch: Job 3 to start at 2026-01-01T00:00:00'\n";

TEST(SlurmCheck, NamesTheOptionsTheClusterRefusesAsTheUserGaveThem) {
  FakeSlurm fake;
  fake.program("sbatch", kSbatch);
  test_support::TempDir logs{"sbatchlog"};
  const std::string log = (logs.path / "calls").string();
  ::setenv("FAKE_SBATCH_LOG", log.c_str(), 1);

  SlurmOptions ok;
  ok.partition = "debug";
  ok.time = "00:10:00";
  ok.cpus_per_task = 2;
  EXPECT_NO_THROW(check_slurm_resources(ok, "the trial jobs"));

  SlurmOptions bad = ok;
  bad.partition = "nope";
  bad.gpus_per_job = 1;
  std::string message;
  const auto refused = refused_options(sbatch_options(bad), &message);
  ASSERT_EQ(refused.size(), 2u);
  EXPECT_EQ(refused[0].flag, "--partition nope");
  EXPECT_EQ(refused[1].flag, "--gpus-per-job 1");
  EXPECT_NE(message.find("invalid partition"), std::string::npos) << message;
  try {
    check_slurm_resources(bad, "the study's trial jobs");
    FAIL() << "refused options must throw";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("refuses the study's trial jobs with --partition nope, --gpus-per-job 1"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("nothing was submitted"), std::string::npos) << what;
  }
  // Every question was --test-only: the fake was never asked to queue anything, and each refused
  // option was asked about alone once the whole set was refused.
  std::ifstream in(log);
  std::string line;
  size_t calls = 0;
  while (std::getline(in, line)) ++calls;
  // The accepted set once; the refused set (--ntasks=1 and 4 more options), then each of its 5
  // options alone, twice (refused_options, then check_slurm_resources).
  EXPECT_EQ(calls, 1u + 2u * (1u + 5u));
}

TEST(SlurmCheck, AnSbatchThatCannotRunIsNotBadInput) {
  FakeSlurm fake;
  fake.program("sbatch", "exit 127\n");
  SlurmOptions options;
  options.partition = "debug";
  try {
    check_slurm_resources(options, "the sweep's array");
    FAIL() << "must throw";
  } catch (const InputError&) {
    FAIL() << "a missing sbatch is not the user's option";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is this a Slurm submit host"), std::string::npos);
  }
}

TEST(SlurmQueue, ReadsArrayTasksAndPlainJobsAndSaysWhenSqueueCannotAnswer) {
  FakeSlurm fake;
  fake.program("squeue",
               "echo \"$@\" > /dev/null\n"
               "echo '41|0|RUNNING|batchlab-s'\n"
               "echo '42|3|PENDING|batchlab-s'\n"
               "echo '40|N/A|RUNNING|batchlab-s-coordinator'\n");
  const auto queue = slurm_queue({"batchlab-s", "batchlab-s-coordinator"});
  ASSERT_TRUE(queue.has_value());
  ASSERT_EQ(queue->size(), 3u);
  EXPECT_EQ((*queue)[0].job_id, "41");
  EXPECT_EQ((*queue)[0].task, std::optional<size_t>(0));
  EXPECT_EQ((*queue)[1].task, std::optional<size_t>(3));
  EXPECT_EQ((*queue)[1].state, "PENDING");
  EXPECT_FALSE((*queue)[2].task.has_value());
  EXPECT_EQ((*queue)[2].name, "batchlab-s-coordinator");

  fake.program("squeue",
               "echo 'slurm_load_jobs error: Unable to contact slurm controller'\nexit 1\n");
  EXPECT_FALSE(slurm_queue({"batchlab-s"}).has_value());
}

// squeue without a user lists everyone's jobs: another user's sweep of the same name (job
// batchlab-s) was counted in `sweep status` as this one's (issue 45).
TEST(SlurmQueue, AsksOnlyForTheJobsOfTheUserRunningBatchlab) {
  FakeSlurm fake;
  fake.program(
      "squeue",
      "me=$(id -un)\n"
      "echo '41|0|RUNNING|batchlab-s'\n"
      "case \" $* \" in *\" --user=$me \"*) ;; *) echo '77|0|RUNNING|batchlab-s' ;; esac\n");
  const auto queue = slurm_queue({"batchlab-s"});
  ASSERT_TRUE(queue.has_value());
  ASSERT_EQ(queue->size(), 1u);
  EXPECT_EQ((*queue)[0].job_id, "41");
}

}  // namespace
}  // namespace batchlab::sweeps
