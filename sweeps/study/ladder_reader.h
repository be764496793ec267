// Reading a spec's [study.ladder] table (spec.h LadderSpec) and turning it into the study's
// batch.global axis. Internal to sweeps/: the [study] reader (spec_reader.cpp) calls it and
// reports the problems with their positions.
#pragma once

#include <toml++/toml.h>

#include <optional>
#include <string>
#include <vector>

#include "sweeps/spec_reader.h"

namespace batchlab::sweeps {

// A problem found in [study.ladder], reported by the reader with its position.
struct LadderProblem {
  Location where;
  std::string key, value, rule;
};

// [study.ladder]: start and ceiling (batch sizes, ceiling = start x 2^k, at most 20 doublings),
// min_gain, flat_doublings, budget_stop and censored_rungs; every problem at once (nullopt when
// there is one).
std::optional<LadderSpec> read_ladder(const toml::node& node, std::vector<LadderProblem>& problems);

// Adds the ladder's batches start, 2 start, ..., ceiling to `spec` as a batch.global grid axis
// (the last dimension: a line's batches are consecutive in the plan); a spec that gives
// batch.global itself is a problem (the batches would come from two places).
std::vector<LadderProblem> add_ladder_batches(const LadderSpec& ladder, SweepSpec& spec,
                                              SpecStorage& storage);

}  // namespace batchlab::sweeps
