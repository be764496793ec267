// What a study with too few seeds for a bootstrap interval (results/seed_bootstrap.h) can say
// instead: the spread of per-seed fits. Each seed that measured at least two batch sizes is fitted
// on its own cells (results/scaling_fit.h), and the range is the smallest and largest S_min, E_min
// and B_crit over those fits. It is named a seed range, never an interval: with two seeds it is
// just the two fits, and it says nothing about how often it holds the true value.
#pragma once

#include <optional>
#include <vector>

#include "results/seed_bootstrap.h"

namespace batchlab::results {

struct SeedRange {
  int fits = 0;  // seeds with a fit of their own (at least two batch sizes measured)
  // min-max over those fits; B_crit ranked as the bootstrap ranks it (ranked_b_crit: a seed whose
  // curve has S_min <= 0 < E_min makes the upper end +infinity, one with E_min <= 0 the lower 0).
  Interval s_min, e_min, b_crit;
};

// nullopt when fewer than two seeds measured two or more batch sizes.
std::optional<SeedRange> per_seed_range(const std::vector<SeedSteps>& cells);

}  // namespace batchlab::results
