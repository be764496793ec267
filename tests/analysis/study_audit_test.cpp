// What the study's shortcuts saved and where they could have decided (issue 23): the cost against
// a grid run to the cap and against a grid stopped at each cell's winning step, and the cells
// whose best rate is interior only because a neighbouring point was pruned.
#include "analysis/study_audit.h"

#include <gtest/gtest.h>

namespace batchlab::analysis {
namespace {

StudyCellRecord reached_cell(const std::string& id, int64_t batch, double steps,
                             const std::string& best_run) {
  StudyCellRecord c;
  c.cell_id = id;
  c.global_batch = batch;
  c.cap_steps = 1000;
  c.status = "reached";
  c.steps_to_target = steps;
  c.best_run_id = best_run;
  return c;
}

StudyTrialRecord trial(const std::string& cell, const std::string& run, int64_t k,
                       const std::string& outcome, int64_t last_step, int64_t batch) {
  StudyTrialRecord t;
  t.cell_id = cell;
  t.run_id = run;
  t.lr_index = k;
  t.outcome = outcome;
  t.last_step = last_step;
  t.samples_trained = last_step * batch;
  t.cap_samples = 1000 * batch;
  return t;
}

TEST(StudyCost, AgainstTheCapAndAgainstTheWinnersStep) {
  // Batch 10, the winner reached at S* = 99.2 (ceil 100). The others: pruned at 40, stopped by
  // the race at 100, diverged at 30. A grid stopped at the winner's step trains 100 steps of
  // every point that did not diverge first, and 30 of the one that did.
  const auto cell = reached_cell("a", 10, 99.2, "r0");
  const std::vector<StudyTrialRecord> trials = {
      trial("a", "r0", 0, "reached", 100, 10), trial("a", "r1", 1, "pruned", 40, 10),
      trial("a", "r2", -1, "stopped_by_race", 100, 10), trial("a", "r3", 2, "diverged", 30, 10)};
  const StudyCost cost = study_cost({cell}, trials);
  EXPECT_EQ(cost.trials, 4);
  EXPECT_EQ(cost.samples_trained, (100 + 40 + 100 + 30) * 10);
  EXPECT_EQ(cost.samples_at_cap, 4 * 1000 * 10);
  EXPECT_EQ(cost.samples_at_winner, (100 + 100 + 100 + 30) * 10);
  EXPECT_DOUBLE_EQ(*cost.ratio, 40000.0 / 2700.0);
  EXPECT_DOUBLE_EQ(*cost.ratio_at_winner, 3300.0 / 2700.0);
  // A censored cell has no winner: every point runs as far as it did (to the cap here).
  StudyCellRecord censored = cell;
  censored.status = "censored";
  censored.steps_to_target.reset();
  censored.best_run_id.reset();
  const auto capped = trial("a", "r4", 0, "capped", 1000, 10);
  EXPECT_EQ(samples_at_winner(censored, capped), 10000);
  EXPECT_EQ(samples_at_winner(cell, capped), 1000);  // the same point in a cell won at 99.2
  EXPECT_FALSE(study_cost({}, {}).ratio.has_value());
}

TEST(StudyPrunedNeighbours, OnlyAnInteriorBestNextToAPrunedPoint) {
  const auto cell = reached_cell("a", 10, 50.0, "r0");
  // Best at 0; -1 pruned, +1 stopped by the race: interior only because of -1.
  std::vector<StudyTrialRecord> trials = {trial("a", "rm", -1, "pruned", 30, 10),
                                          trial("a", "r0", 0, "reached", 50, 10),
                                          trial("a", "rp", 1, "stopped_by_race", 50, 10)};
  EXPECT_EQ(pruned_neighbours(cell, trials), (std::vector<int64_t>{-1}));
  // Both neighbours pruned, before the winner's S* (50).
  trials[2].outcome = "pruned";
  trials[2].last_step = 40;
  EXPECT_EQ(pruned_neighbours(cell, trials), (std::vector<int64_t>{-1, 1}));
  // A race stop is fair: the point could no longer have won.
  trials[0].outcome = "stopped_by_race";
  trials[2].outcome = "stopped_by_race";
  EXPECT_TRUE(pruned_neighbours(cell, trials).empty());
  // Best at the edge (nothing above it): not interior, nothing to mark.
  const std::vector<StudyTrialRecord> edge = {trial("a", "rm", -1, "pruned", 30, 10),
                                              trial("a", "r0", 0, "reached", 50, 10)};
  EXPECT_TRUE(pruned_neighbours(cell, edge).empty());
  // A pruned point two steps away does not decide the best's interiority.
  const std::vector<StudyTrialRecord> far = {
      trial("a", "rmm", -2, "pruned", 30, 10), trial("a", "rm", -1, "capped", 1000, 10),
      trial("a", "r0", 0, "reached", 50, 10), trial("a", "rp", 1, "stopped_by_race", 50, 10)};
  EXPECT_TRUE(pruned_neighbours(cell, far).empty());
  // A neighbour pruned at or past the winner's S* (50) had not reached by then: it could not
  // have won, so the pruning decided nothing; one pruned before S* still counts.
  std::vector<StudyTrialRecord> late = {trial("a", "rm", -1, "pruned", 50, 10),
                                        trial("a", "r0", 0, "reached", 50, 10),
                                        trial("a", "rp", 1, "pruned", 49, 10)};
  EXPECT_EQ(pruned_neighbours(cell, late), (std::vector<int64_t>{1}));
  late[2].last_step = 64;
  EXPECT_TRUE(pruned_neighbours(cell, late).empty());
  // No best (censored): nothing.
  StudyCellRecord censored = cell;
  censored.best_run_id.reset();
  EXPECT_TRUE(pruned_neighbours(censored, trials).empty());
}

}  // namespace
}  // namespace batchlab::analysis
