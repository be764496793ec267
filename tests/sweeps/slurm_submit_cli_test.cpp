// `sweep submit --slurm` and `sweep run` against what real sites do, with fake Slurm commands first
// on PATH (issue 32): options that would break the sbatch script, sbatch's own message when Slurm
// has no configuration, a partition that is down, a site banner on stderr, one coordinator per
// study (the lock held by another command, a live coordinator job seen by squeue), a filesystem
// without flock, and no lock file left behind by a refused command.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "sweeps/run_layout.h"
#include "tests/sweeps/sweep_cli_util.h"
#include "tests/test_paths.h"

namespace batchlab::sweeps {
namespace {

namespace fs = std::filesystem;
using cli::testing::contains;
using cli::testing::read_text;
using cli::testing::run_shell;
using testing::SweepDir;

std::string submit_study_body() {
  return "[set]\n\"data.val_size\" = 128\n\"data.test_size\" = 128\n"
         "[grid]\n\"batch.global\" = [32, 64]\n[study]\n"
         "target = { metric = \"val_acc\", value = 0.5 }\nmax_steps = 40\n";
}

// Fake sbatch, squeue, sinfo and scancel in <dir>/bin: sbatch logs its arguments to sbatch.log,
// prints the site banner `banner` on stderr and the next id (from 100) on stdout; squeue prints
// the file `queue`; sinfo prints the file `partitions` (default "debug*|up").
struct FakeSlurmCommands {
  fs::path dir;
  explicit FakeSlurmCommands(const fs::path& where) : dir(where / "fake") {
    fs::create_directories(dir / "bin");
    std::ofstream(dir / "partitions") << "debug*|up\n";
    sbatch("");
    program("squeue", "cat '" + dir.string() + "/queue' 2>/dev/null; true\n");
    program("sinfo", "cat '" + dir.string() + "/partitions'\n");
    program("scancel", "echo \"$@\" >> '" + dir.string() + "/scancel.log'\n");
  }
  void program(const std::string& name, const std::string& body) const {
    const fs::path path = dir / "bin" / name;
    std::ofstream(path) << "#!/bin/sh\n" << body;
    ::chmod(path.c_str(), 0755);
  }
  // `extra` runs first (e.g. a failure that exits).
  void sbatch(const std::string& extra) const {
    const std::string d = dir.string();
    program("sbatch", "echo \"$@\" >> '" + d + "/sbatch.log'\n" + extra +
                          "case \"$1\" in --test-only) exit 0;; esac\n"
                          "echo 'sbatch: INFO: account demo' >&2\n"
                          "n=$(cat '" +
                          d +
                          "/next' 2>/dev/null || echo 100)\n"
                          "echo $((n + 1)) > '" +
                          d +
                          "/next'\n"
                          "echo \"$n\"\n");
  }
  // The fakes first on PATH; sbatch's retries wait 1 ms instead of 1 s.
  std::string env() const {
    return "BATCHLAB_SLURM_RETRY_MS=1 PATH=" + (dir / "bin").string() + ":$PATH ";
  }
  // Submissions other than --test-only checks.
  int submissions() const {
    std::ifstream in(dir / "sbatch.log");
    std::string line;
    int n = 0;
    while (std::getline(in, line)) n += line.rfind("--test-only", 0) == 0 ? 0 : 1;
    return n;
  }
};

cli::testing::CommandResult with_fake(const FakeSlurmCommands& fake, const std::string& args) {
  return run_shell(fake.env() + cli::testing::shell_quote(test_paths::binary()) + " " + args +
                   " 2>&1");
}

TEST(SlurmSubmitCli, OptionsThatWouldBreakTheScriptAreRefusedNamingTheOption) {
  SweepDir s("opts", "[grid]\n\"batch.global\" = [64]\n");
  FakeSlurmCommands fake(s.dir.path);
  const std::string spec = cli::testing::shell_quote(s.spec);
  auto injected = with_fake(
      fake, "sweep submit " + spec +
                " --slurm --dry-run --sbatch-arg \"$(printf -- '--comment=a\\necho INJECTED')\"");
  EXPECT_EQ(injected.exit_code, 2) << injected.output;
  EXPECT_TRUE(contains(injected.output, "--sbatch-arg '--comment=a\\necho INJECTED'"))
      << injected.output;
  EXPECT_TRUE(contains(injected.output, "line break")) << injected.output;
  auto spaced = with_fake(fake, "sweep submit " + spec +
                                    " --slurm --dry-run --partition 'a b' "
                                    "--time \"$(printf '1:00\\t')\"");
  EXPECT_EQ(spaced.exit_code, 2) << spaced.output;
  EXPECT_TRUE(contains(spaced.output, "--partition 'a b': contains a space")) << spaced.output;
  EXPECT_TRUE(contains(spaced.output, "--time '1:00\\x09': contains the control character 0x09"))
      << "every problem at once: " << spaced.output;
  auto zero = with_fake(fake, "sweep submit " + spec + " --slurm --dry-run --max-parallel 0");
  EXPECT_EQ(zero.exit_code, 2) << zero.output;
  EXPECT_TRUE(contains(zero.output, "--max-parallel 0: must be a whole number from 1"))
      << zero.output;
  EXPECT_FALSE(fs::exists(s.runs_dir())) << "nothing written";
  EXPECT_EQ(fake.submissions(), 0);
}

TEST(SlurmSubmitCli, SbatchsOwnMessageIsPassedOnWhenSlurmHasNoConfiguration) {
  SweepDir s("noconf", "[grid]\n\"batch.global\" = [64]\n");
  FakeSlurmCommands fake(s.dir.path);
  fake.sbatch(
      "echo 'sbatch: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host' >&2\n"
      "echo 'sbatch: error: fetch_config: DNS SRV lookup failed' >&2\n"
      "echo 'sbatch: error: _establish_config_source: failed to fetch config' >&2\n"
      "echo 'sbatch: fatal: Could not establish a configuration source' >&2\nexit 1\n");
  auto r = with_fake(fake, "sweep submit " + cli::testing::shell_quote(s.spec) + " --slurm");
  EXPECT_EQ(r.exit_code, 1) << "not the options' fault: " << r.output;
  EXPECT_TRUE(contains(r.output, "Could not establish a configuration source")) << r.output;
  EXPECT_FALSE(contains(r.output, "fix the option")) << r.output;
  EXPECT_FALSE(fs::exists(s.db)) << "nothing recorded";
}

TEST(SlurmSubmitCli, APartitionThatIsDownIsRefusedAtSubmitWithNothingRecorded) {
  SweepDir s("down", submit_study_body());
  FakeSlurmCommands fake(s.dir.path);
  std::ofstream(fake.dir / "partitions") << "debug*|down\nother|up\n";
  auto r = with_fake(
      fake, "sweep submit " + cli::testing::shell_quote(s.spec) + " --slurm --partition debug");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "partition debug is down")) << r.output;
  EXPECT_EQ(fake.submissions(), 0);
  EXPECT_FALSE(fs::exists(s.db));
  EXPECT_FALSE(fs::exists(fs::path(s.runs_dir()) / "slurm" / "coordinator.txt"));
}

// Defect 1 for a plain sweep: the quickstart's array tasks got scheduler_job "sbatch: INFO: ..._0".
TEST(SlurmSubmitCli, ASiteBannerOnStderrDoesNotBecomeTheArraysJobId) {
  SweepDir s("banner", "[grid]\n\"batch.global\" = [32, 64]\n");
  FakeSlurmCommands fake(s.dir.path);
  auto r = with_fake(fake, "sweep submit " + cli::testing::shell_quote(s.spec) + " --slurm");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "submitted Slurm job 100 with 2 array tasks")) << r.output;
  const auto jobs = s.query("SELECT scheduler_job FROM runs ORDER BY scheduler_job");
  ASSERT_EQ(jobs.rows.size(), 2u);
  EXPECT_EQ(jobs.rows[0][0].value_or(""), "100_0");
  EXPECT_EQ(jobs.rows[1][0].value_or(""), "100_1");
}

// Issue 45, point 1: sbatch queues the job, then its answer times out ("Socket timed out on
// send/recv operation"). A blind retry queued the job a second time: a plain sweep's whole array,
// or a study's coordinator. The job in the queue, found by its comment, is adopted instead.
std::string sbatch_queues_then_times_out(const FakeSlurmCommands& fake) {
  const std::string d = fake.dir.string();
  return "if [ \"$1\" != --test-only ] && [ ! -e '" + d + "/timed-out' ]; then\n  touch '" + d +
         "/timed-out'\n  c=$(sed -n 's/^#SBATCH --comment=//p' \"$2\")\n  n=$(cat '" + d +
         "/next' 2>/dev/null || echo 100)\n  echo $((n + 1)) > '" + d +
         "/next'\n  echo \"$n|$c\" >> '" + d +
         "/queue'\n  echo 'sbatch: error: Batch job submission failed: Socket timed out on "
         "send/recv "
         "operation' >&2\n  exit 1\nfi\n";
}

TEST(SlurmSubmitCli, APlainSweepsArrayQueuedBeforeATimeOutIsAdoptedNotSubmittedTwice) {
  SweepDir s("dup", "[grid]\n\"batch.global\" = [32, 64]\n");
  FakeSlurmCommands fake(s.dir.path);
  fake.sbatch(sbatch_queues_then_times_out(fake));
  auto r = with_fake(fake, "sweep submit " + cli::testing::shell_quote(s.spec) + " --slurm");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "submitted Slurm job 100 with 2 array tasks")) << r.output;
  EXPECT_EQ(fake.submissions(), 1) << "one array, not two";
  const auto jobs = s.query("SELECT scheduler_job FROM runs ORDER BY scheduler_job");
  ASSERT_EQ(jobs.rows.size(), 2u);
  EXPECT_EQ(jobs.rows[0][0].value_or(""), "100_0");
  EXPECT_EQ(jobs.rows[1][0].value_or(""), "100_1");
}

TEST(SlurmSubmitCli, AStudysCoordinatorQueuedBeforeATimeOutIsAdoptedNotSubmittedTwice) {
  SweepDir s("dupstudy", submit_study_body());
  FakeSlurmCommands fake(s.dir.path);
  fake.sbatch(sbatch_queues_then_times_out(fake));
  auto r = with_fake(fake, "sweep submit " + cli::testing::shell_quote(s.spec) + " --slurm");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "submitted its coordinator as Slurm job 100")) << r.output;
  EXPECT_EQ(fake.submissions(), 1) << "one coordinator, not two";
  EXPECT_EQ(read_text(s.runs_dir() + "/slurm/coordinator.txt"), "100\n");
}

// Defect 4: `sweep submit` checked for a live coordinator with no lock, so two at once both
// submitted one; and a local `sweep run` started trials beside a coordinator job on another host.
TEST(SlurmSubmitCli, AStudySubmitWaitsForNoOneItIsRefusedWhileTheLockIsHeld) {
  SweepDir s("locked", submit_study_body());
  FakeSlurmCommands fake(s.dir.path);
  auto held = FileLock::try_acquire(RunLayout(s.runs_dir()).coordinator_lock_path());
  ASSERT_TRUE(held);
  held->describe("pid 1: batchlab sweep submit\n");
  auto r = with_fake(fake, "sweep submit " + cli::testing::shell_quote(s.spec) + " --slurm");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "already being run or checked")) << r.output;
  EXPECT_EQ(fake.submissions(), 0) << "no coordinator submitted beside the lock holder";
}

TEST(SlurmSubmitCli, ALocalRunIsRefusedWhileTheStudysCoordinatorJobIsLive) {
  SweepDir s("live", submit_study_body());
  FakeSlurmCommands fake(s.dir.path);
  auto first = with_fake(fake, "sweep submit " + cli::testing::shell_quote(s.spec) + " --slurm");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_EQ(read_text(s.runs_dir() + "/slurm/coordinator.txt"), "100\n");
  std::ofstream(fake.dir / "queue") << "100|N/A|RUNNING|batchlab-live-coordinator\n";
  auto again = with_fake(fake, "sweep submit " + cli::testing::shell_quote(s.spec) + " --slurm");
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_TRUE(contains(again.output, "queued or running as Slurm job 100")) << again.output;
  EXPECT_EQ(fake.submissions(), 1);
  auto local = with_fake(fake, "sweep run " + cli::testing::shell_quote(s.spec));
  EXPECT_EQ(local.exit_code, 1) << local.output;
  EXPECT_TRUE(contains(local.output, "Slurm job 100")) << local.output;
  EXPECT_FALSE(fs::exists(s.db)) << "no trial started, nothing recorded";
}

// Defect 6: on a mount without flock every `sweep run` said "already being run".
TEST(SlurmSubmitCli, AFilesystemWithoutFlockIsReportedAsSuchNotAsAHeldLock) {
  SweepDir s("nolock", "[grid]\n\"batch.global\" = [64]\n");
  FakeSlurmCommands fake(s.dir.path);
  auto r = run_shell("LD_PRELOAD=" + cli::testing::shell_quote(test_paths::flock_enolck_shim()) +
                     " " + cli::testing::shell_quote(test_paths::binary()) + " sweep run " +
                     cli::testing::shell_quote(s.spec) + " 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "cannot lock " + s.runs_dir() + "/coordinator.lock")) << r.output;
  EXPECT_TRUE(contains(r.output, "No locks available")) << r.output;
  EXPECT_FALSE(contains(r.output, "already being run")) << r.output;
}

TEST(SlurmSubmitCli, ACommandThatRefusesItsInputLeavesNoLockFileBehind) {
  SweepDir s("corrupt", "[grid]\n\"batch.global\" = [64]\n");
  fs::create_directories(fs::path(s.db).parent_path());
  std::ofstream(s.db) << std::string(8192, 'z');
  auto r = s.sweep("run");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_FALSE(fs::exists(s.runs_dir() + "/coordinator.lock")) << r.output;
}

}  // namespace
}  // namespace batchlab::sweeps
