// Which pending trial of a scaling study starts next (issue 24): the order that shortens the study.
//
// A study's cells form chains: a line's cell at batch 2B opens only when the cell at B is complete
// (its centre is B's best rate), so the study lasts at least as long as its longest chain of
// remaining cell work, however many workers there are. Spec order (cell order, then decision
// order) starts the first lines' trials first and leaves the later lines, often the seed cells or
// the last optimizer, for the end: the image study started LAMB's and the seed cells' trials only
// after 55 of its 72 minutes. The shortest-study order is list scheduling by critical path:
//   1. the trial whose line has the most expected work left from its cell upward (the critical
//      path: the cells above it cannot start before this one completes), so the lines with the
//      most batch sizes to go, and the cells at their bottom, start first;
//   2. then the longer expected trial first (longest processing time first);
//   3. then spec order (cell, then decision order: a cell's centre before its neighbours), so
//      equal keys keep today's order and the choice is deterministic.
// A variant that started every open cell's centre before anything else was measured and dropped:
// in the replayed image study it lengthened the study with 2 workers by 4% (docs/sweeps.md).
// Expected work is in samples: a cell's cap in samples until its line has a fit, then 3 x the
// fitted S(B) (the cap the study itself gives it), times the cell's bracket of 3 trials.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace batchlab::sweeps::study {

enum class SchedulePolicy {
  spec_order,     // cell order, then decision order (the engine's order before issue 24)
  shortest_study  // the critical-path order above (the default)
};

// What the order sees of one pending trial.
struct PendingTrial {
  size_t cell = 0;          // the cell's index in plan order
  size_t order = 0;         // its decision order within the cell (0: the centre)
  double chain_work = 0.0;  // expected samples of its cell and of every cell above it in its line
  double trial_work = 0.0;  // expected samples of this trial
};

// True when `a` starts before `b` under `policy`.
bool starts_before(const PendingTrial& a, const PendingTrial& b, SchedulePolicy policy);

// The index in `pending` of the trial to start next (nullopt when empty).
std::optional<size_t> next_trial(const std::vector<PendingTrial>& pending, SchedulePolicy policy);

}  // namespace batchlab::sweeps::study
