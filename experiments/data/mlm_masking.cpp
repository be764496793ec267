#include "experiments/data/mlm_masking.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/errors.h"
#include "experiments/data/tokenizer.h"

namespace batchlab::data {

MaskingCounts masking_counts(int64_t eligible, double mask_prob) {
  MaskingCounts c;
  c.eligible = eligible;
  c.selected = std::llround(mask_prob * static_cast<double>(eligible));
  c.masked = std::llround(0.8 * static_cast<double>(c.selected));
  c.randomized = std::llround(0.1 * static_cast<double>(c.selected));
  c.kept = c.selected - c.masked - c.randomized;
  return c;
}

MaskingResult apply_mlm_masking(int64_t* ids, int64_t n, double mask_prob, int64_t vocab_size,
                                uint64_t seed) {
  if (vocab_size <= kFirstOrdinaryId) {
    throw InputError(
        fmt::format("vocabulary of {} ids has no ordinary tokens to mask", vocab_size));
  }
  std::vector<int64_t> eligible;
  eligible.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] >= kFirstOrdinaryId) eligible.push_back(i);
  }
  MaskingResult r;
  r.counts = masking_counts(static_cast<int64_t>(eligible.size()), mask_prob);
  const auto selected = static_cast<size_t>(r.counts.selected);

  // Partial Fisher-Yates: eligible[0, selected) becomes a uniform random subset in random order,
  // so cutting it into [MASK] / random / kept runs is a uniform random partition too.
  SplitMix64 rng(seed);
  for (size_t k = 0; k < selected; ++k) {
    const size_t j = k + static_cast<size_t>(rng.below(eligible.size() - k));
    std::swap(eligible[k], eligible[j]);
  }
  const auto ordinary = static_cast<uint64_t>(vocab_size - kFirstOrdinaryId);
  std::vector<std::pair<int64_t, int64_t>> picked(selected);  // (position, original id)
  for (size_t k = 0; k < selected; ++k) {
    const int64_t pos = eligible[k];
    picked[k] = {pos, ids[pos]};
    if (k < static_cast<size_t>(r.counts.masked)) {
      ids[pos] = kMaskId;
    } else if (k < static_cast<size_t>(r.counts.masked + r.counts.randomized)) {
      ids[pos] = kFirstOrdinaryId + static_cast<int64_t>(rng.below(ordinary));
    }
  }
  // Ascending positions: the model gathers hidden states in memory order.
  std::sort(picked.begin(), picked.end());
  r.positions.resize(selected);
  r.labels.resize(selected);
  for (size_t k = 0; k < selected; ++k) {
    r.positions[k] = picked[k].first;
    r.labels[k] = picked[k].second;
  }
  return r;
}

}  // namespace batchlab::data
