// sbatch_submit (sweeps/slurm_commands.h) when the controller times out (issue 45): a time-out
// after the job was queued is adopted through the job's comment, never submitted twice; a
// time-out before it was queued is retried; and while squeue cannot tell, nothing is submitted.
// Fake `sbatch` and `squeue` programs first on PATH; the queue is the file `queue` ("ID|COMMENT").
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "sweeps/slurm_commands.h"
#include "tests/temp_dir.h"

namespace batchlab::sweeps {
namespace {

class SbatchFakes {
 public:
  SbatchFakes() : old_path_(std::getenv("PATH") ? std::getenv("PATH") : "") {
    ::setenv("PATH", (dir_.path.string() + ":" + old_path_).c_str(), 1);
    ::setenv("BATCHLAB_SLURM_RETRY_MS", "1", 1);
    program("squeue", "cat " + path("queue") + " 2>/dev/null; true\n");
    script_ = dir_.file("job.sh", "#!/bin/bash\n#SBATCH --job-name=batchlab-x\necho hi\n");
  }
  ~SbatchFakes() {
    ::setenv("PATH", old_path_.c_str(), 1);
    ::unsetenv("BATCHLAB_SLURM_RETRY_MS");
  }
  void program(const std::string& name, const std::string& body) {
    const std::string p = path(name);
    std::ofstream(p) << "#!/bin/sh\n" << body;
    ::chmod(p.c_str(), 0755);
  }
  std::string path(const std::string& name) const { return (dir_.path / name).string(); }
  const std::string& script() const { return script_; }
  // How often sbatch ran (each call appends a line to sbatch.log).
  int submissions() const {
    std::ifstream in(path("sbatch.log"));
    int n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  }
  static constexpr const char* kTimeout =
      "echo 'sbatch: error: Batch job submission failed: Socket timed out on send/recv "
      "operation' >&2; exit 1\n";

 private:
  test_support::TempDir dir_{"sbatch"};
  std::string old_path_;
  std::string script_;
};

// The controller queues the job, then the answer times out: the job in the queue is the one.
TEST(SbatchSubmit, AJobQueuedBeforeTheTimeOutIsAdoptedNotSubmittedAgain) {
  SbatchFakes fakes;
  const std::string log = fakes.path("sbatch.log");
  fakes.program("sbatch", "echo \"$@\" >> " + log +
                              "\n"
                              "if [ ! -e " +
                              fakes.path("once") + " ]; then touch " + fakes.path("once") +
                              "\n"
                              "  c=$(sed -n 's/^#SBATCH --comment=//p' \"$2\")\n"
                              "  echo \"41|other\" >> " +
                              fakes.path("queue") +
                              "\n"
                              "  echo \"777|$c\" >> " +
                              fakes.path("queue") + "\n" + SbatchFakes::kTimeout +
                              "fi\necho 778\n");
  EXPECT_EQ(sbatch_submit(fakes.script(), default_retry_policy()), "777");
  EXPECT_EQ(fakes.submissions(), 1);
}

// The time-out came before anything was queued: retried, and the marker is not written twice.
TEST(SbatchSubmit, AJobNotQueuedIsSubmittedAgain) {
  SbatchFakes fakes;
  const std::string log = fakes.path("sbatch.log");
  fakes.program("sbatch", "echo \"$@\" >> " + log + "\nif [ ! -e " + fakes.path("once") +
                              " ]; then touch " + fakes.path("once") + "; " +
                              SbatchFakes::kTimeout + "fi\necho 900\n");
  EXPECT_EQ(sbatch_submit(fakes.script(), default_retry_policy()), "900");
  EXPECT_EQ(fakes.submissions(), 2);
  EXPECT_EQ(sbatch_submit(fakes.script(), default_retry_policy()), "900");
  std::ifstream in(fakes.script());
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  const size_t first = s.find("#SBATCH --comment=batchlab-submit:");
  ASSERT_NE(first, std::string::npos) << s;
  EXPECT_EQ(s.find("#SBATCH --comment=", first + 1), std::string::npos) << s;
  EXPECT_EQ(s.rfind("#!/bin/bash\n#SBATCH --comment=", 0), 0u) << s;
}

// Neither sbatch nor squeue answers: the job may be queued, so it is never submitted a second time
// and the error says where to look.
TEST(SbatchSubmit, WhileSqueueCannotTellNothingIsSubmittedAgain) {
  SbatchFakes fakes;
  const std::string log = fakes.path("sbatch.log");
  fakes.program("sbatch", "echo \"$@\" >> " + log + "\n" + SbatchFakes::kTimeout);
  fakes.program("squeue", "echo 'squeue: error: Socket timed out' >&2; exit 1\n");
  try {
    sbatch_submit(fakes.script(), default_retry_policy());
    FAIL() << "must throw";
  } catch (const SbatchError& e) {
    EXPECT_EQ(e.failure(), SbatchFailure::transient);
    EXPECT_NE(std::string(e.what()).find("the job may be queued"), std::string::npos) << e.what();
  }
  EXPECT_EQ(fakes.submissions(), 1);
}

}  // namespace
}  // namespace batchlab::sweeps
