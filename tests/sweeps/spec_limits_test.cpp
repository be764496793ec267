// Spec values that passed `sweep plan` and failed later, or overflowed into keys the user did not
// set: a sweep.name too long for a file name, and a [study] max_samples near 2^63. Both are refused
// when the spec is read, with file:line:col, and a sweep refused creates nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "sweeps/study/plan.h"
#include "tests/sweeps/sweep_cli_util.h"
#include "tests/sweeps/sweep_test_util.h"

namespace batchlab::sweeps {
namespace {

using testing::config_error;
using testing::contains;
using testing::SweepFiles;

TEST(SpecLimits, ASweepNameTooLongForAFileNameIsRefusedWithItsPosition) {
  const std::string name(300, 'a');
  SweepFiles files("schema_version = 1\n[sweep]\nname = \"" + name +
                   "\"\nexperiment = \"base.toml\"\n");
  const auto message = config_error([&] { files.spec(); });
  EXPECT_TRUE(contains(message, "spec.toml:3:8: sweep.name = \"" + name +
                                    "\": 300 characters; "
                                    "must be at most 100"))
      << message;
  SweepFiles longest("schema_version = 1\n[sweep]\nname = \"" + std::string(100, 'a') +
                     "\"\nexperiment = \"base.toml\"\n");
  EXPECT_EQ(longest.spec().name, std::string(100, 'a'));
}

TEST(SpecLimits, PlanAndRunRefuseALongSweepNameAndCreateNothing) {
  // It used to pass `sweep plan`, then fail `sweep run` with "File name too long", leaving runs/.
  testing::SweepDir s(std::string(300, 'n'), "[grid]\n\"batch.global\" = [64, 128]\n");
  const auto plan = s.sweep("plan");
  EXPECT_EQ(plan.exit_code, 2) << plan.output;
  EXPECT_TRUE(contains(plan.output, "spec.toml:3:8: sweep.name")) << plan.output;
  const auto run = s.sweep("run");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_FALSE(std::filesystem::exists(s.dir.path / "runs")) << run.output;
  EXPECT_FALSE(std::filesystem::exists(s.dir.path / "results")) << run.output;
}

TEST(SpecLimits, SweepRunRefusesWorkerAndRetryCountsBeyondTheirBounds) {
  // --workers 100000 used to be taken as asked (one training process per job at once).
  testing::SweepDir s("bounds", "[grid]\n\"batch.global\" = [64, 128]\n");
  const auto workers = s.sweep("run --workers 100000");
  EXPECT_EQ(workers.exit_code, 2) << workers.output;
  EXPECT_TRUE(contains(workers.output, "--workers 100000: must be between 1 and 1024"))
      << workers.output;
  const auto retries = s.sweep("run --retries 100000");
  EXPECT_EQ(retries.exit_code, 2) << retries.output;
  EXPECT_TRUE(contains(retries.output, "--retries 100000: must be between 0 and 100"))
      << retries.output;
  EXPECT_FALSE(std::filesystem::exists(s.db));
}

// Lines 1..8 fixed ([study] on line 8), the study's keys from line 9 on.
std::string study_spec(const std::string& study_keys) {
  return "schema_version = 1\n[sweep]\nname = \"s\"\nexperiment = \"base.toml\"\n[set]\n"
         "\"data.val_size\" = 100\n[grid]\n[study]\n"
         "target = { metric = \"val_acc\", value = 0.8 }\n" +
         study_keys + "\n";
}

TEST(SpecLimits, StudyMaxSamplesHasAnUpperBoundWithItsPosition) {
  // It used to overflow into "schedule.steps = -36028797018963967", a key the user did not set.
  SweepFiles files(study_spec("max_samples = 9223372036854775807"));
  const auto message = config_error([&] { files.spec(); });
  EXPECT_TRUE(contains(message,
                       "spec.toml:10:15: study.max_samples = 9223372036854775807: must be an "
                       "integer > 0 (training samples per trial at most) and <= 1000000000000"))
      << message;
  EXPECT_FALSE(contains(message, "schedule.steps = -")) << message;
  SweepFiles steps(study_spec("max_steps = 9223372036854775807"));
  EXPECT_TRUE(contains(config_error([&] { steps.spec(); }),
                       "spec.toml:10:13: study.max_steps = 9223372036854775807: must be an "
                       "integer > 0 (updates per trial at most) and <= 1000000000000"));
  SweepFiles points(study_spec("lr_points_max = 9223372036854775807\nmax_steps = 10"));
  EXPECT_TRUE(contains(config_error([&] { points.spec(); }),
                       "spec.toml:10:17: study.lr_points_max = 9223372036854775807: must be an "
                       "integer >= 3"));
}

TEST(SpecLimits, TheLargestMaxSamplesDerivesItsStepsWithoutOverflow) {
  SweepFiles files(study_spec("max_samples = 1000000000000"));
  const auto spec = files.spec();
  const auto plan = expand(spec, testing::plan_options());
  const auto st = study::plan_study(spec, plan, testing::plan_options());
  ASSERT_EQ(st.cells.size(), 1u);
  EXPECT_EQ(st.cells[0].max_cap_steps, 15625000000);  // ceil(10^12 / 64)
  const auto trial = study::make_trial(st, 0, 0.5, st.cells[0].max_cap_steps);
  EXPECT_TRUE(contains(trial.config_toml, "steps = 15625000000")) << trial.config_toml;
  EXPECT_EQ(trial.derived.total_steps, 15625000000);
}

}  // namespace
}  // namespace batchlab::sweeps
