// Batch ladders in `batchlab report` (docs/sweeps.md "Batch ladder"): per group of lines a ladder
// moved together (an optimizer and setting of one sweep, every seed), the batches it measured and
// why it stopped. Recomputed from the stored cells with the coordinator's own rule
// (results/batch_ladder.h) and the ladder keys of the sweep's stored spec, so a resumed or copied
// database says the same.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "results/batch_ladder.h"

namespace batchlab::analysis {

struct StudyCellSummary;

struct StudyLadder {
  std::string series;  // the fit series of its cells (study_report.h)
  std::string sweep_id;
  std::vector<int64_t> batches;  // measured (cells with rows), ascending
  // flattening | ceiling | cap | budget, or "" while the ladder may still climb.
  std::string stop;
  std::string why;            // results::describe_ladder_stop, or what it waits for
  std::vector<double> gains;  // steps(B) / steps(2B) per doubling the rule went through
  results::LadderRule rule;
};

// The [study.ladder] rule of a stored sweep spec (its ceiling, min_gain, flat_doublings), nullopt
// when the spec has no ladder or cannot be read.
std::optional<results::LadderRule> ladder_rule_of_spec(const std::string& spec_toml);

// One entry per ladder group, in the order of `cells`; cells of sweeps without a rule are left
// out.
std::vector<StudyLadder> summarize_ladders(const std::vector<StudyCellSummary>& cells,
                                           const std::map<std::string, results::LadderRule>& rules);

// "ladder nesterov: 256..4096, stopped: flattening (...)" (text output).
std::string ladder_line(const StudyLadder& ladder);

}  // namespace batchlab::analysis
