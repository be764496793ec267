#include "analysis/study_audit.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

namespace batchlab::analysis {

int64_t samples_at_winner(const StudyCellRecord& cell, const StudyTrialRecord& trial) {
  if (!cell.steps_to_target) {
    // No winner, so no race: a grid runs the point as far as the study did (to the cap, or to
    // where it diverged).
    return trial.samples_trained.value_or(trial.cap_samples.value_or(0));
  }
  int64_t steps = static_cast<int64_t>(std::ceil(*cell.steps_to_target));
  if (trial.outcome == "diverged" && trial.last_step) steps = std::min(steps, *trial.last_step);
  return steps * cell.global_batch;
}

StudyCost study_cost(const std::vector<StudyCellRecord>& cells,
                     const std::vector<StudyTrialRecord>& trials) {
  std::map<std::string, const StudyCellRecord*> by_id;
  for (const auto& c : cells) by_id[c.cell_id] = &c;
  StudyCost cost;
  cost.trials = static_cast<int>(trials.size());
  for (const auto& t : trials) {
    cost.samples_trained += t.samples_trained.value_or(0);
    cost.samples_at_cap += t.cap_samples.value_or(0);
    auto it = by_id.find(t.cell_id);
    if (it != by_id.end()) cost.samples_at_winner += samples_at_winner(*it->second, t);
  }
  if (cost.samples_trained > 0) {
    const auto trained = static_cast<double>(cost.samples_trained);
    cost.ratio = static_cast<double>(cost.samples_at_cap) / trained;
    cost.ratio_at_winner = static_cast<double>(cost.samples_at_winner) / trained;
  }
  return cost;
}

namespace {

// A trial pruned at or past the winner's S* had not reached by then: its own crossing lies later,
// so run on it could not have won, and the pruning decided nothing.
bool pruned_past_winner(const StudyCellRecord& cell, const StudyTrialRecord& t) {
  return cell.steps_to_target && t.last_step &&
         static_cast<double>(*t.last_step) >= *cell.steps_to_target;
}

}  // namespace

std::vector<int64_t> pruned_neighbours(const StudyCellRecord& cell,
                                       const std::vector<StudyTrialRecord>& trials) {
  if (!cell.best_run_id) return {};
  const auto best = std::find_if(trials.begin(), trials.end(),
                                 [&](const auto& t) { return t.run_id == *cell.best_run_id; });
  if (best == trials.end()) return {};
  bool below = false, above = false;
  std::vector<int64_t> out;
  for (const auto& t : trials) {
    below = below || t.lr_index < best->lr_index;
    above = above || t.lr_index > best->lr_index;
    if (std::llabs(t.lr_index - best->lr_index) == 1 && t.outcome == "pruned" &&
        !pruned_past_winner(cell, t)) {
      out.push_back(t.lr_index);
    }
  }
  if (!below || !above) return {};
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace batchlab::analysis
