// The committed Fashion-MNIST study (docs/data/fmnist_scaling_study.db, issue 13) replayed under
// the fair-run pruning rule of issue 23: the recorded rule reproduces 18 of the 19 recorded prunes
// (the replay reads the study as the coordinator did, in time order), and the new rule overturns
// the prunes of the cells listed below, which leaves their best rates unsettled
// (docs/reproductions.md).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "sweeps/study/replay.h"
#include "tests/temp_dir.h"
#include "tests/test_paths.h"

namespace batchlab::sweeps::study {
namespace {

std::vector<CellReplay> replay(const PruneRule& rule) {
  // The Store migrates what it opens: work on a copy, never on the committed file.
  test_support::TempDir dir;
  const auto db = dir / "study.db";
  std::filesystem::copy_file(
      std::string(test_paths::source_dir()) + "/docs/data/fmnist_scaling_study.db", db);
  results::Store store(db);
  return replay_pruning(store, std::nullopt, rule);
}

std::string name(const CellReplay& c) {
  return fmt::format("{} {} seed {}", c.optimizer, c.global_batch, c.seed);
}

// The evaluation after `step` in the trial's record (0: none).
int64_t next_eval(const std::vector<int64_t>& steps, int64_t step) {
  for (int64_t s : steps) {
    if (s > step) return s;
  }
  return 0;
}

TEST(StudyPruningReplay, TheRecordedRuleReproducesTheRecordedPrunes) {
  const auto cells = replay(PruneRule{0, 0, 0.0});
  size_t pruned = 0, exact = 0, one_later = 0;
  std::vector<std::string> not_reproduced;
  for (const auto& c : cells) {
    for (const auto& p : c.pruned) {
      ++pruned;
      if (!p.decided_step || !p.stop_step) {
        not_reproduced.push_back(p.run_id);
        continue;
      }
      // The stop lands where the replay says, or one evaluation later when the coordinator read
      // the evaluation it decided on only after the trainer had passed the next one (it polls
      // every 250 ms; early evaluations come every few tenths of a second).
      if (*p.stop_step == p.recorded_step) {
        ++exact;
      } else {
        EXPECT_EQ(next_eval(p.steps, *p.stop_step), p.recorded_step)
            << name(c) << " " << p.run_id << ": replayed stop " << *p.stop_step;
        ++one_later;
      }
    }
  }
  EXPECT_EQ(pruned, 19u);
  EXPECT_EQ(exact, 16u);
  EXPECT_EQ(one_later, 2u);
  // One prune the stored rows do not explain: Nesterov 512 seed 0 at lr_index +1, pruned at step
  // 41 with a best accuracy of 0.59 there, which both leaders it ever had crossed at step 36
  // (within 2x). Recorded as it is rather than hidden.
  EXPECT_EQ(not_reproduced, (std::vector<std::string>{"825bc28ffe9f46fe"}));
}

TEST(StudyPruningReplay, TheFairRunRuleLeavesTheseCellsOpen) {
  const auto cells = replay(PruneRule{});
  std::set<std::string> open, open_next_to_best;
  for (const auto& c : cells) {
    if (!c.open()) continue;
    open.insert(name(c));
    for (const auto& p : c.pruned) {
      if (!p.decided_step && p.next_to_best) open_next_to_best.insert(name(c));
    }
  }
  // Under the fair-run rule (3 evaluations past warmup, half the leader's steps) these cells'
  // pruned trials would have run on; their best rates stand only if those trials would not have
  // reached first. 13 of the 23 cells; in 10 the overturned trial is next to the best.
  const std::set<std::string> expected_open = {
      "adamw 128 seed 0",    "lamb 128 seed 0",     "lars 128 seed 0",     "lars 2048 seed 0",
      "lars 512 seed 0",     "nesterov 128 seed 1", "nesterov 128 seed 2", "nesterov 256 seed 0",
      "nesterov 256 seed 1", "nesterov 512 seed 0", "nesterov 64 seed 0",  "nesterov 64 seed 1",
      "nesterov 64 seed 2"};
  const std::set<std::string> expected_next_to_best = {
      "adamw 128 seed 0",    "lamb 128 seed 0",     "lars 128 seed 0",     "lars 512 seed 0",
      "nesterov 128 seed 2", "nesterov 256 seed 0", "nesterov 256 seed 1", "nesterov 64 seed 0",
      "nesterov 64 seed 1",  "nesterov 64 seed 2"};
  EXPECT_EQ(open, expected_open);
  EXPECT_EQ(open_next_to_best, expected_next_to_best);
}

}  // namespace
}  // namespace batchlab::sweeps::study
