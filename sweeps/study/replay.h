// Replays a finished study's pruning decisions under another rule (issue 23): which pruned trials
// the rule would still have pruned, from the rows the study stored.
//
// The coordinator decided as evaluations arrived, against the curves known at that moment (the
// leader then may not be the cell's final one). The replay rebuilds those moments: an
// evaluation's time is its run's runs.started_at plus its evals.wall_s, and at every evaluation
// of the cell, in time order, the rule sees each trial's evaluations up to then. The first moment
// it asks a trial to stop at step r decides; the trial then stops at its first evaluation at or
// past r that comes after that moment (the trainer reads the stop file after each evaluation).
//
// A pruned trial's record ends where it stopped, so a stricter rule either still decides within
// the record (the decision stands, perhaps an evaluation later) or does not: the trial would have
// run on, and what it would have done is not in the database. A cell with such an overturned trial
// is open: its best rate stands only if that trial, run on, would not have reached first. Race
// stops and every other outcome are kept as recorded.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "results/store.h"
#include "sweeps/study/decisions.h"

namespace batchlab::sweeps::study {

struct PrunedTrialReplay {
  std::string run_id;
  int64_t lr_index = 0;
  int64_t recorded_step = 0;            // the last evaluated step of the pruned run
  std::vector<int64_t> steps;           // its evaluated steps, ascending
  std::optional<int64_t> decided_step;  // the rule's request (nullopt: overturned)
  std::optional<int64_t> stop_step;     // the evaluation it stops at, when the record has it
  bool next_to_best = false;            // lr_index is the cell's best +- 1
};

struct CellReplay {
  std::string cell_id;
  std::string optimizer;
  int64_t global_batch = 0;
  int64_t seed = 0;
  std::optional<int64_t> best_lr_index;  // the recorded best trial's point
  std::vector<PrunedTrialReplay> pruned;
  // Some pruned trial would have run on: the best rate is not settled under the rule.
  bool open() const;
};

// Every cell of `sweep_id` (all cells when unset) with at least one pruned trial, replayed under
// `rule` with each cell's own warmup (from study_cells) in place of rule.warmup_steps, in the
// store's cell order. Reads study_cells, study_trials, runs.started_at and the trials' evals;
// writes nothing. Throws InputError when a trial's run has no start time.
std::vector<CellReplay> replay_pruning(results::Store& store,
                                       const std::optional<std::string>& sweep_id,
                                       const PruneRule& rule);

}  // namespace batchlab::sweeps::study
