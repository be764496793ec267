// What a study's shortcuts saved, and where they could have moved an answer (issue 23).
//
// Cost: the samples the study trained against two grids of the same learning-rate points: every
// trial run to its cell's cap (what a plain grid search with a fixed budget trains), and every
// trial stopped at its cell's winning step ceil(S*) (or earlier where it diverged), which only
// hindsight allows: a lower bound for any grid of those points, since each point must run to S*
// to show it is not faster. A study whose racing and pruning work lands between the two; quoting
// only the first overstates the saving (the image study: 9.5x against the cap, 0.9-1.0x against
// the winner's step).
//
// Pruning: a cell's best rate is interior (points ran on both sides of it) only because of
// pruning when a neighbouring point (lr_index +- 1) was pruned: run on, it might have reached
// first, made the best an edge and sent the bracket further. Race stops are not counted: a trial
// stopped at the leader's S* could no longer have won; nor is a neighbour pruned at or past the
// winner's S* (it had not reached by then, so its crossing lies later: the text study flagged 3 of
// 11 cells for such neighbours).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "analysis/study_records.h"

namespace batchlab::analysis {

struct StudyCost {
  int trials = 0;
  int64_t samples_trained = 0;    // sum of study_trials.samples_trained
  int64_t samples_at_cap = 0;     // sum of study_trials.cap_samples: every trial run to its cap
  int64_t samples_at_winner = 0;  // every trial stopped at its cell's ceil(S*) (see above)
  std::optional<double> ratio;    // samples_at_cap / samples_trained
  std::optional<double> ratio_at_winner;  // samples_at_winner / samples_trained
};

// A trial's samples at the winner's step: batch x min(ceil(S*), its last step when it diverged);
// in a cell without a winner (censored or searching), what it trained to its cap.
int64_t samples_at_winner(const StudyCellRecord& cell, const StudyTrialRecord& trial);

StudyCost study_cost(const std::vector<StudyCellRecord>& cells,
                     const std::vector<StudyTrialRecord>& trials);

// The learning-rate indices of the pruned trials next to the cell's best when the best is
// interior (ascending; empty otherwise). `trials` are the cell's own.
std::vector<int64_t> pruned_neighbours(const StudyCellRecord& cell,
                                       const std::vector<StudyTrialRecord>& trials);

}  // namespace batchlab::analysis
