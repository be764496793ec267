// One ratio of two series' steps to target over every batch both measured, with a 95% interval
// from a bootstrap over the seeds, resampled within each batch (issue 46): where per-batch
// intervals from 3 seeds are too wide to exclude 1 at most batches, the same seeds pooled over 6
// batches can say which series needs fewer steps.
//
// The estimate: the geometric mean over the batches of the per-batch ratios, i.e. exp of the mean
// over batches of (mean log steps of A's seeds - mean log steps of B's), every batch weighted
// equally whatever its seeds (as the fit weighs one point per batch, results/seed_bootstrap.h). It
// answers "by what factor does A need more steps than B, typically over these batches", not
// whether the factor is the same at every batch: a ratio that changes sign across batches pools
// towards 1.
//
// The interval: every batch's seeds of each side are drawn with replacement within that batch and
// side (as many as it ran), about their mean with the deviations scaled by sqrt(n / (n - 1)) and by
// t / z with the pooled degrees of freedom sum(n - 1) over batches and sides, as the fit's
// bootstrap does (results/seed_bootstrap.h, where the coverage of these corrections is measured);
// the 2.5th and 97.5th percentiles of the resampled ratios. Its two-sided p-value of "no
// difference" is 2 min(P*(ratio <= 1), P*(ratio >= 1)) over the resamples, so p < 0.05 exactly
// when the 95% interval excludes 1; compare feeds it to Holm's procedure (results/holm.h) with
// the per-batch tests.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "results/seed_bootstrap.h"

namespace batchlab::results {

inline constexpr int kPooledResamples = 10000;

// One batch both series measured: each reached seed's log steps, per side.
struct BatchLogSteps {
  double batch = 0.0;
  std::vector<double> a, b;
};

struct PooledRatio {
  int batches = 0;
  double ratio = 1.0;  // A / B
  // Only when every batch has kMinSeedsForInterval or more seeds on each side.
  std::optional<Interval> interval;
  std::optional<double> p;  // two-sided, with the interval
  int resamples = 0;
};

// nullopt for no batches; throws std::invalid_argument for a batch with no seeds on a side.
std::optional<PooledRatio> pooled_ratio(const std::vector<BatchLogSteps>& batches,
                                        int resamples = kPooledResamples,
                                        uint64_t generator_seed = kSeedBootstrapSeed);

}  // namespace batchlab::results
