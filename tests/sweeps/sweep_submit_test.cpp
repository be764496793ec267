// `sweep submit --slurm` without Slurm: the script and task list it writes, and one array task
// run by hand as Slurm would run it (records on local disk, snapshots published into the run
// folder, folded by `sweep status`). tests/sweeps/slurm_test.sh does the same on a real cluster.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "results/query.h"
#include "tests/sweeps/sweep_cli_util.h"
#include "tests/test_paths.h"

namespace batchlab::sweeps {
namespace {

using testing::read_file;
using testing::SweepDir;

TEST(SweepSubmit, DryRunWritesOneArrayAndATaskRunsItsJobThroughASnapshot) {
  SweepDir s("array", "[grid]\n\"batch.global\" = [64, 128]\n", /*epochs=*/1);
  auto submit = s.sweep(
      "submit --slurm --partition debug --time 00:05:00 --max-parallel 1 "
      "--gpus-per-job 1 --sbatch-arg=--account=lab --dry-run");
  ASSERT_EQ(submit.exit_code, 0) << submit.output;
  EXPECT_NE(submit.output.find("not submitted (--dry-run)"), std::string::npos) << submit.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(submit.output, m, std::regex("wrote (\\S+\\.sbatch)")))
      << submit.output;
  const std::string script = read_file(m[1]);
  for (const char* line :
       {"#SBATCH --array=0-1%1", "#SBATCH --partition=debug", "#SBATCH --time=00:05:00",
        "#SBATCH --gres=gpu:1", "#SBATCH --cpus-per-task=1", "#SBATCH --account=lab",
        "sweep slurm-task"}) {
    EXPECT_NE(script.find(line), std::string::npos) << line << "\n" << script;
  }
  const std::string tasks =
      std::regex_replace(std::string(m[1]), std::regex("\\.sbatch$"), ".tasks");
  const auto ids = s.run_ids();
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(read_file(tasks), s.run_dir(ids[0]) + "\n" + s.run_dir(ids[1]) + "\n");
  // The plan is registered: both runs are planned in the sweep database.
  EXPECT_EQ(s.value("SELECT count(*) FROM runs WHERE status = 'planned' AND sweep_id = 'array'"),
            "2");

  auto task = testing::run_batchlab("sweep slurm-task " + testing::shell_quote(tasks) + " 1");
  ASSERT_EQ(task.exit_code, 0) << task.output << read_file(s.run_dir(ids[1]) + "/log.txt");
  const std::string snapshot = s.run_dir(ids[1]) + "/records.db";
  // File format bytes 18 and 19 of the header: 1 = rollback journal, 2 = WAL.
  const std::string header = read_file(snapshot).substr(0, 20);
  ASSERT_EQ(header.size(), 20u);
  EXPECT_EQ(header[18], 1);
  EXPECT_EQ(header[19], 1);
  EXPECT_FALSE(std::filesystem::exists(snapshot + "-wal"));
  auto status = s.sweep("status");
  EXPECT_NE(status.output.find("done 1  diverged 0  running 0  preempted 0  failed 0  planned 1"),
            std::string::npos)
      << status.output;
  EXPECT_EQ(s.value("SELECT count(*) FROM steps WHERE run_id = '" + ids[1] + "'"), "4");

  // A task that crashes records why in its snapshot; status reports it.
  const std::string cmd = "BATCHLAB_TEST_FAULT=crash@0:" + ids[0] + " " + test_paths::binary() +
                          " sweep slurm-task " + testing::shell_quote(tasks) + " 0 >/dev/null 2>&1";
  EXPECT_NE(std::system(cmd.c_str()), 0);
  status = s.sweep("status");
  EXPECT_NE(status.output.find("crashed: killed by signal 6 (SIGABRT)"), std::string::npos)
      << status.output;
}

}  // namespace
}  // namespace batchlab::sweeps
