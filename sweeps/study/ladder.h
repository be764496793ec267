// The coordinator's side of a batch ladder ([study.ladder], docs/sweeps.md "Batch ladder"): which
// planned cells may open, from the answers of the cells below them. The rule itself is
// results/batch_ladder.h (the report applies the same one to the stored rows).
//
// A ladder moves a group of lines at once: the lines that differ only in the seed (the project
// measures every batch with the same seeds, so seed 0 and seed 1 never stop at different batches).
// A cell at batch 2B opens when every cell of its group at B and below has its answer and the rule,
// walked over those rungs, did not stop. Everything it reads is stored (study_cells), so a resumed
// study opens the same cells and stops at the same rung.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "results/batch_ladder.h"
#include "results/rows.h"
#include "sweeps/study/plan.h"

namespace batchlab::sweeps::study {

// Per planned cell, its stored row once the cell has its answer (reached or censored), else
// nullptr.
using CellAnswers = std::vector<const results::StudyCellRow*>;

// The rule of a study's [study.ladder] (the study has one), with its cap keys.
results::LadderRule ladder_rule(const StudySpec& study);

// The rungs of `c`'s group below `c`'s batch, ascending, as far as every cell of a rung has its
// answer; `complete` says whether that covers every rung below.
struct RungsBelow {
  std::vector<results::LadderRung> rungs;
  bool complete = true;
};
RungsBelow rungs_below(const StudyPlan& plan, const CellAnswers& answers, size_t c);

// Whether the ladder lets `c` open now (true without a ladder).
bool ladder_allows(const StudyPlan& plan, const CellAnswers& answers, size_t c);

// Whether the ladder stopped below `c`: the cell will never open (false without a ladder).
bool ladder_closed(const StudyPlan& plan, const CellAnswers& answers, size_t c);

// Cells a batch ladder stopped below, by cell id, from the study's stored cell rows (`stored`, in
// any order; a searching row is not an answer): a cell without a row that the rule closes
// (ladder_closed) will never open and is not owed. The engine's summary counts these as beyond
// the ladder and `sweep status` shows them so. Empty without a ladder.
std::set<std::string> cells_beyond_ladder(const StudyPlan& plan,
                                          const std::vector<results::StudyCellRow>& stored);

// A group whose ladder stopped: the group's coordinates and the reason, for people
// (results::describe_ladder_stop), or nullopt while it may still climb.
std::optional<std::string> ladder_stop_of(const StudyPlan& plan, const CellAnswers& answers,
                                          const std::string& group);

}  // namespace batchlab::sweeps::study
