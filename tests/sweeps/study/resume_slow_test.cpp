// A real tiny study on synthetic data (slow: about a minute on 2 cores), killed with kill -9
// mid-way and run again, gives the same trials and cells as an uninterrupted one, none run twice;
// `sweep status` then shows it complete.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "tests/sweeps/sweep_cli_util.h"

namespace batchlab::sweeps {
namespace {

using testing::Background;
using testing::count_of;
using testing::SweepDir;

// Adam learns the synthetic images fast enough for trials of 64 steps to reach the target.
std::string study_body(const std::string& study_keys) {
  return "[set]\n\"data.val_size\" = 128\n\"data.test_size\" = 128\n\"optim.name\" = \"adam\"\n"
         "\"optim.base_lr\" = 0.004\n[grid]\n\"batch.global\" = [32, 64]\n[study]\n" +
         study_keys + "\n";
}

// The tiny study: 2 cells (batch 32 and 64) on 384 synthetic training images, caps of 64 steps,
// 2 evaluations per octave, 10 trials in all (measured). Warmup over the whole cap keeps pruning
// out: whether a pruned trial stops before it would have reached depends on when the coordinator
// reads its curve, while the race's requests of a sequential study are in place before a trial
// starts and make the run reproducible.
const char* kTinyStudy =
    "target = { metric = \"val_acc\", value = 0.25 }\nmax_steps = 64\nevals_per_octave = 2\n"
    "warmup = 0.99";

std::map<std::string, std::string> trial_outcomes(const SweepDir& s) {
  std::map<std::string, std::string> out;
  for (const auto& row : s.query("SELECT run_id, outcome FROM study_trials").rows) {
    out[*row[0]] = *row[1];
  }
  return out;
}

std::string cells_summary(const SweepDir& s) {
  std::string out;
  for (const auto& row : s.query("SELECT global_batch, status, best_lr, steps_to_target, "
                                 "cap_steps FROM study_cells ORDER BY global_batch")
                             .rows) {
    for (const auto& v : row) out += v.value_or("NULL") + " ";
    out += "\n";
  }
  return out;
}

TEST(StudyRun, KillNineMidStudyThenRerunRunsTheSameTrialsNoneTwice) {
  SweepDir reference("studyref", study_body(kTinyStudy), /*epochs=*/1);
  auto full = reference.sweep("run --workers 1");
  ASSERT_EQ(full.exit_code, 0) << full.output;
  const auto expected = trial_outcomes(reference);
  ASSERT_GE(expected.size(), 6u) << full.output;
  EXPECT_EQ(reference.value("SELECT count(*) FROM study_cells WHERE status = 'searching'"), "0");

  SweepDir s("studykill", study_body(kTinyStudy), /*epochs=*/1);
  std::string killed_output;
  {
    Background run({"sweep", "run", s.spec, "--workers", "1"}, (s.dir.path / "run1.log").string());
    // Two trials ended and a third is running: then the coordinator and its trial die at once.
    ASSERT_TRUE(run.wait_for([](const std::string& out) {
      const size_t ended = count_of(out, "] reached ") + count_of(out, "] stopped_by_race ") +
                           count_of(out, "] capped ") + count_of(out, "] diverged ");
      return ended >= 2 && count_of(out, "] start ") >= 3;
    })) << run.output();
    run.kill_group(SIGKILL);
    EXPECT_EQ(run.wait(), -SIGKILL);
    killed_output = run.output();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // The trials whose end the killed coordinator recorded.
  std::set<std::string> ended_before;
  for (const auto& row :
       s.query("SELECT run_id FROM study_trials WHERE outcome != 'running'").rows) {
    ended_before.insert(*row[0]);
  }
  ASSERT_GE(ended_before.size(), 2u) << killed_output;
  ASSERT_LT(ended_before.size(), expected.size()) << "the kill came too late to test anything";

  auto second = s.sweep("run --workers 1");
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_EQ(trial_outcomes(s), expected) << killed_output << "\n---\n" << second.output;
  EXPECT_EQ(cells_summary(s), cells_summary(reference));
  for (const auto& id : ended_before) {
    EXPECT_EQ(count_of(second.output, "start     " + id), 0u)
        << id << " had ended before the kill and must not run again\n"
        << second.output;
  }
  // Every trial ran to its outcome exactly once: one attempt, or two for the one interrupted.
  for (const auto& [id, outcome] : expected) {
    const std::string attempts = s.value("SELECT attempts FROM runs WHERE run_id = '" + id + "'");
    EXPECT_TRUE(attempts == "1" || attempts == "2") << id << " attempts " << attempts;
  }
  testing::expect_no_duplicate_rows(s);
  EXPECT_EQ(s.value("SELECT count(*) FROM study_trials"), std::to_string(expected.size()));

  auto status = s.sweep("status");
  EXPECT_EQ(status.exit_code, 0) << status.output;
  EXPECT_NE(status.output.find("study studykill: 2 cells"), std::string::npos) << status.output;
  EXPECT_EQ(status.output.find("undecided trials"), std::string::npos) << status.output;
}

}  // namespace
}  // namespace batchlab::sweeps
