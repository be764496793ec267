// The statistics of a fixed-budget comparison (analysis/budget_report.h): each (series, batch) has
// a final metric per seed, all at one point chosen on the first seed's held-out data.
//
//   mean over seeds     with Student's t interval (n - 1 dof); called 95% only from 3 seeds or more
//                       (with 2 it is printed as the seeds' range, never as 95%);
//   difference          of two series' means at one batch: Welch's t (results/student_t.h) and its
//                       two-sided p; the batches of one comparison are a family, and a verdict
//                       needs Holm's step-down (Holm 1979) at a family-wise 5%, so 6 batches with
//                       no true difference print a false verdict in at most 5% of comparisons;
//   trend               the slope of the metric against log2(batch) (per doubling), least squares
//                       over the batches' means, with a percentile interval from 4,000 resamples
//                       of the seeds within each batch (the same seeds at every batch are kept
//                       together by batch, as the fit's bootstrap does); a difference of two
//                       series' slopes resamples both. Every resample is kept (a slope always
//                       exists from two batches or more). Its two-sided p is twice the share of
//                       resamples on the far side of 0 ((k + 1) / (R + 1), never 0), so a trend
//                       joins the same Holm family as the batches' differences.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace batchlab::analysis {

struct SeedInterval {
  double mean = 0.0;
  std::optional<double> low, high;  // nullopt with one seed
  size_t n = 0;
  bool is_95 = false;  // a 95% t interval (n >= 3); else the seeds' range (n == 2)
};
std::optional<SeedInterval> seed_interval(const std::vector<double>& values);

// One test of a comparison's family: its two-sided p-value, the fewest seeds behind it (a test
// from fewer than 3 never joins a family: its interval is not called 95%) and Holm's decision.
struct FamilyTest {
  double p = 1.0;
  size_t min_seeds = 0;
  bool holm_rejects = false;  // at the family-wise level, set by holm()
};

struct Difference : FamilyTest {
  double estimate = 0.0;         // mean(a) - mean(b)
  double low = 0.0, high = 0.0;  // Welch 95% interval (unadjusted)
};
// nullopt unless both sides have 2 seeds or more.
std::optional<Difference> welch_difference(const std::vector<double>& a,
                                           const std::vector<double>& b);

// Holm's step-down over a family: sorts the p-values, rejects while p_(i) <= alpha / (m - i + 1).
// A test from fewer than 3 seeds a side is left out of the family and never rejects.
void holm(std::vector<FamilyTest*> family, double alpha);

using SeedsByBatch = std::map<int64_t, std::vector<double>>;  // batch -> the seeds' values

// min_seeds: the fewest seeds at a batch (the interval is 95% only from 3); p: the bootstrap's.
struct Slope : FamilyTest {
  double per_doubling = 0.0;  // d metric / d log2(batch), on the batches' means
  double low = 0.0, high = 0.0;
  size_t batches = 0;
};
// nullopt with fewer than 2 batches. `seed` fixes the resampling (reports are reproducible).
std::optional<Slope> bootstrap_slope(const SeedsByBatch& data, uint64_t seed = 2020);
// The slope of `a` minus that of `b`, over the batches both have.
std::optional<Slope> bootstrap_slope_difference(const SeedsByBatch& a, const SeedsByBatch& b,
                                                uint64_t seed = 2020);

}  // namespace batchlab::analysis
