// `batchlab sweep plan|run` on a batch-ladder study with bad [study.ladder] keys: exit 2, every
// problem named with its key and file:line:col, nothing run or recorded; and the rule `sweep plan`
// states. The ladder run end to end
// is study_ladder_fmnist_slow_test.cpp.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/sweeps/sweep_cli_util.h"

namespace batchlab::sweeps {
namespace {

using testing::SweepDir;

// Line 6 is the first line of the body (schema_version and the [sweep] table take lines 1-5).
std::string ladder_body(const std::string& ladder_keys, const std::string& grid = "") {
  return "[set]\n\"data.val_size\" = 128\n\"data.test_size\" = 128\n" + grid +
         "[study]\ntarget = { metric = \"val_acc\", value = 0.5 }\nmax_steps = 64\n"
         "[study.ladder]\n" +
         ladder_keys + "\n";
}

TEST(StudyLadderCli, BadLadderKeysExitTwoNamingTheKeyAndNothingIsRecorded) {
  // Lines 6-8 [set], 9 [study], 10 target, 11 max_steps, 12 [study.ladder], 13 on its keys.
  SweepDir s("ladderbad", ladder_body("start = 64\nceiling = 48\nmin_gain = 0.9"));
  auto plan = s.sweep("plan");
  EXPECT_EQ(plan.exit_code, 2) << plan.output;
  EXPECT_NE(plan.output.find("spec.toml:14:11: study.ladder.ceiling = 48: must be above start "
                             "(64)"),
            std::string::npos)
      << plan.output;
  EXPECT_NE(plan.output.find("spec.toml:15:12: study.ladder.min_gain = 0.9: must be a number > 1"),
            std::string::npos)
      << plan.output;
  auto run = s.sweep("run");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_FALSE(std::filesystem::exists(s.db)) << "an invalid study must not start";

  SweepDir power("ladderpow", ladder_body("start = 32\nceiling = 100"));
  auto r = power.sweep("run");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("study.ladder.ceiling = 100: must be start x 2^k, a power-of-two "
                          "multiple of start (32): nearest 64 or 128"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(power.db));

  SweepDir both("ladderboth",
                ladder_body("start = 32\nceiling = 64", "[grid]\n\"batch.global\" = [32]\n"));
  auto b = both.sweep("run");
  EXPECT_EQ(b.exit_code, 2) << b.output;
  EXPECT_NE(b.output.find("spec.toml:10:1: batch.global: the batches come from [study.ladder]"),
            std::string::npos)
      << b.output;
  EXPECT_FALSE(std::filesystem::exists(both.db));
}

TEST(StudyLadderCli, PlanStatesTheRuleAndHowManyCensoredBatchesALineMayClimbPast) {
  SweepDir s("ladderplan", ladder_body("start = 32\nceiling = 128\ncensored_rungs = 1"));
  auto plan = s.sweep("plan");
  EXPECT_EQ(plan.exit_code, 0) << plan.output;
  EXPECT_NE(plan.output.find("batch ladder: 32..128, doubling while"), std::string::npos)
      << plan.output;
  EXPECT_NE(plan.output.find("a line that has not reached the target yet climbs past up to 1 "
                             "censored batch first"),
            std::string::npos)
      << plan.output;
  SweepDir plain("ladderplain", ladder_body("start = 32\nceiling = 128"));
  auto p = plain.sweep("plan");
  EXPECT_EQ(p.exit_code, 0) << p.output;
  EXPECT_EQ(p.output.find("climbs past"), std::string::npos) << p.output;
}

}  // namespace
}  // namespace batchlab::sweeps
