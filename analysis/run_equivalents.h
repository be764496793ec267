// A study's cost in the unit the field counts: full-run equivalents (issue 46). Shallue et al.
// (2019) ran about 100 completed trials per batch size; AlgoPerf allows 5 per workload. A batchlab
// cell races 3-6 learning rates and stops most of them early, so its cost in trials overstates it
// and its cost in samples says nothing by itself. Per series and batch: the samples its study
// trained there over the samples of one run of the first seed's winning trial (what a single run
// at the right settings costs), counted for the first seed's search alone and with the later
// seeds (which rerun the first seed's best rate, or search again).
//
// The unit is the winning trial's samples_trained (it stopped at the evaluation past the target);
// where the first seed's cell is censored there is no winner, and the unit is a run to the cap
// (its trials' cap_samples), named as such. A batch whose first seed is still searching has no
// unit yet.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "results/query_result.h"

namespace batchlab::analysis {

struct StudyCellSummary;

struct RunEquivalents {
  std::string series;
  int64_t batch = 0;
  int64_t first_seed = 0;
  int seeds = 0;                // distinct seeds with a cell at this batch
  int first_trials = 0;         // trials of the first seed's cell(s)
  int all_trials = 0;           // trials of every seed's cells
  int64_t first_samples = 0;    // samples trained by the first seed's trials
  int64_t all_samples = 0;      // by every seed's trials
  std::optional<int64_t> unit;  // samples of one run: the winner's, or one run to the cap
  bool unit_is_cap = false;     // the first seed's cell is censored: the unit is a run to the cap
  std::optional<double> first;  // first_samples / unit
  std::optional<double> all;    // all_samples / unit
};

// Per series (in the order the cells first name them) and ascending batch.
std::vector<RunEquivalents> run_equivalents(const std::vector<StudyCellSummary>& cells);

// series, batch, seeds, trials (first seed, all), run equivalents (first seed, all), the unit.
results::QueryResult run_equivalents_table(const std::vector<RunEquivalents>& rows);

}  // namespace batchlab::analysis
