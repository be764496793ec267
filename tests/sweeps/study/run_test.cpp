// `batchlab sweep plan|run|submit` on a study spec: spec errors exit 2 with file:line:col before
// anything runs, the plan lists cells and first trials, and `submit --slurm --dry-run` writes the
// coordinator's script. The real study runs are in study_resume_slow_test.cpp, and through Slurm
// in slurm_study_test.sh.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/sweeps/sweep_cli_util.h"

namespace batchlab::sweeps {
namespace {

using testing::count_of;
using testing::SweepDir;

// Line 6 is the first line of the body (schema_version and the [sweep] table take lines 1-5).
std::string study_body(const std::string& study_keys) {
  return "[set]\n\"data.val_size\" = 128\n\"data.test_size\" = 128\n"
         "[grid]\n\"batch.global\" = [32, 64]\n[study]\n" +
         study_keys + "\n";
}

TEST(StudyPlan, SpecErrorsExitTwoWithTheirPositionsBeforeAnythingRuns) {
  SweepDir s("studybad", study_body("target = { metric = \"test_acc\", value = 0.5 }\n"
                                    "lr_points_max = 2\nlr_centre = 0.1"));
  auto plan = s.sweep("plan");
  EXPECT_EQ(plan.exit_code, 2) << plan.output;
  EXPECT_NE(plan.output.find("spec.toml:12:21: study.target.metric = \"test_acc\""),
            std::string::npos)
      << plan.output;
  EXPECT_NE(plan.output.find("use a val_ metric"), std::string::npos) << plan.output;
  EXPECT_NE(plan.output.find("spec.toml:13:17: study.lr_points_max = 2"), std::string::npos)
      << plan.output;
  EXPECT_NE(plan.output.find("spec.toml:14:1: study.lr_centre = 0.1: unknown key, did you mean "
                             "study.lr_center?"),
            std::string::npos)
      << plan.output;
  auto run = s.sweep("run");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_FALSE(std::filesystem::exists(s.db)) << "an invalid study must not start";
}

TEST(StudyPlan, ListsTheCellsAndTheFirstTrialOfEachAndWritesTheSlurmCoordinatorScript) {
  SweepDir s("studyplan",
             study_body("target = { metric = \"val_acc\", value = 0.5 }\nmax_steps = 40"));
  auto plan = s.sweep("plan");
  ASSERT_EQ(plan.exit_code, 0) << plan.output;
  EXPECT_NE(plan.output.find("2 cells, each a learning-rate search raced to val_acc >= 0.5"),
            std::string::npos)
      << plan.output;
  EXPECT_NE(plan.output.find("best of batch 32"), std::string::npos) << plan.output;
  EXPECT_EQ(count_of(plan.output, "  new"), 2u) << plan.output;
  auto json = s.sweep("plan --format json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  const auto parsed = nlohmann::json::parse(json.output, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(parsed.is_discarded()) << json.output;
  ASSERT_EQ(parsed["cells"].size(), 2u) << json.output;
  const auto& first = parsed["cells"][0];
  EXPECT_EQ(first["centre"], 0.05);
  EXPECT_EQ(first["cap_steps"], 40);
  EXPECT_EQ(first["warmup_steps"], 5);
  EXPECT_TRUE(parsed["cells"][1]["first_trial"].is_null()) << json.output;
  EXPECT_EQ(parsed["study"]["target_metric"], "val_acc");

  // Slurm: the coordinator's script, written and not submitted; nothing recorded.
  auto submit = testing::run_batchlab("sweep submit " + testing::shell_quote(s.spec) +
                                      " --slurm --dry-run --partition p --time 01:00:00 "
                                      "--coordinator-time 2-00:00:00 --max-parallel 8");
  EXPECT_EQ(submit.exit_code, 0) << submit.output;
  EXPECT_NE(submit.output.find("not submitted (--dry-run)"), std::string::npos) << submit.output;
  EXPECT_FALSE(std::filesystem::exists(s.db)) << "a dry run records nothing";
  const auto script = testing::read_file(
      (s.dir.path / "runs" / "studyplan" / "slurm" / "coordinator.sbatch").string());
  EXPECT_NE(script.find("#SBATCH --job-name=batchlab-studyplan-coordinator"), std::string::npos)
      << script;
  EXPECT_NE(script.find("#SBATCH --time=2-00:00:00"), std::string::npos) << script;
  EXPECT_NE(script.find("#SBATCH --cpus-per-task=1"), std::string::npos) << script;
  EXPECT_NE(script.find("#SBATCH --requeue"), std::string::npos) << script;
  EXPECT_NE(script.find("sweep slurm-coordinator"), std::string::npos) << script;
  // The trials' resources travel to the coordinator, which submits the trials with them.
  EXPECT_NE(script.find("'--time' '01:00:00'"), std::string::npos) << script;
  EXPECT_NE(script.find("'--max-parallel' '8'"), std::string::npos) << script;
  // One table renders every option back (sweeps/slurm_options.h): the coordinator gets them all.
  EXPECT_NE(script.find("'--coordinator-time' '2-00:00:00'"), std::string::npos) << script;

  auto plain_flag = testing::run_batchlab("sweep submit " + testing::shell_quote(s.spec) +
                                          " --slurm --dry-run --retries -1");
  EXPECT_EQ(plain_flag.exit_code, 2) << plain_flag.output;
  EXPECT_NE(plain_flag.output.find("--retries -1: must be a whole number from 0 to 100"),
            std::string::npos)
      << plain_flag.output;
}

}  // namespace
}  // namespace batchlab::sweeps
