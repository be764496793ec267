#include "results/seed_range.h"

#include <algorithm>
#include <map>

namespace batchlab::results {

namespace {

void widen_range(Interval& range, double value, bool first) {
  if (first) {
    range = {value, value};
    return;
  }
  range.low = std::min(range.low, value);
  range.high = std::max(range.high, value);
}

}  // namespace

std::optional<SeedRange> per_seed_range(const std::vector<SeedSteps>& cells) {
  std::map<int64_t, std::vector<SeedSteps>> by_seed;
  for (const auto& c : cells) by_seed[c.seed].push_back(c);
  SeedRange range;
  for (const auto& [seed, own] : by_seed) {
    // fit_scaling gives nullopt below two batch sizes: that seed has no fit of its own.
    const auto fit = fit_scaling(seed_mean_points(own));
    if (!fit) continue;
    const bool first = range.fits == 0;
    widen_range(range.s_min, fit->s_min, first);
    widen_range(range.e_min, fit->e_min, first);
    widen_range(range.b_crit, ranked_b_crit(*fit), first);
    ++range.fits;
  }
  if (range.fits < 2) return std::nullopt;
  return range;
}

}  // namespace batchlab::results
