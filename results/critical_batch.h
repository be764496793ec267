// The critical batch as the field defines it, several ways (issue 46). Papers that report "the
// critical batch" mean different numbers, and on the same steps-to-target table they differ by a
// factor of 2.5-8 (Zhang et al.'s published table, docs/analysis.md); a tool that reports one must
// say which, and this one reports them side by side:
//
// 1. B_crit = E_min / S_min of S(B) = S_min + E_min / B (McCandlish et al. 2018; results/
//    scaling_fit.h): the batch where the curve's two costs are equal, S = 2 S_min.
// 2. The 20%-over-linear-scaling batch (Zhang et al. 2024, "How Does Critical Batch Size Scale in
//    Pre-training?"): the batch at which the samples to the target, S(B) B, exceed perfect linear
//    scaling from a reference batch, S(B_ref) B_ref, by 20%. Its reference is the series' smallest
//    measured batch (stated with it), since linear scaling is extrapolated from somewhere:
//    a. from the fit: S(B) B = 1.2 S(B_ref) B_ref solves to B = 1.2 B_ref + 0.2 E_min / S_min
//       (= 1.2 B_ref + 0.2 B_crit; unbounded when S_min <= 0), so the two definitions differ by
//       construction, by about 5x when B_ref is small beside B_crit;
//    b. from the measured steps: the first batch whose samples exceed 1.2 x the reference batch's,
//       interpolated linearly in log samples against log batch between the two measured batches
//       around the crossing; above the largest measured batch when none does (a lower bound).
// 3. B_simple = tr(Sigma) / |G|^2, the gradient noise scale, where runs measured it (the report's
//    run average; McCandlish et al.: B_crit ~ B_noise ~ B_simple, approximately).
// Merrill et al. (2025) measure a local critical batch by branching runs from checkpoints; a study
// of finished runs cannot, and the report does not pretend to.
//
// How sure each is, named as what it is (Spread): never called 95% from fewer than
// results::kMinSeedsForInterval seeds at every batch.
// - 95%: with that many seeds, as for B_crit (results/seed_bootstrap.h): the seeds of every batch
//   are resampled within it (the same widened draws), the fit redone or the crossing read again;
//   the 2.5th and 97.5th percentiles over every resample. A resample with no value in range (S_min
//   <= 0 for the fit, no crossing by the largest batch for the measured steps) is not dropped,
//   which would narrow the interval towards the resamples that happened to cross: it is ranked
//   unbounded (+infinity), and the report says how many there were.
// - seed range: with fewer seeds (2 per batch, or 3 at some batches and 1 at others), a bootstrap
//   has too few distinct resamples to mean 95% (with 2 seeds a batch has 3), so, as the fit table
//   does for E_min/S_min (results/seed_range.h), each seed's own value: its own fit, or its own
//   crossing from the series' reference batch (a seed that did not run the reference batch has
//   none). The min-max over the seeds with a value, a seed with none in range counted unbounded.
// - se: one seed, the fit's standard error propagated (0.2 se(B_crit); the reference is fixed).
// - none, with why: one seed for the measured crossing (nothing to compare it with), or a fit
//   through two batches (no residual, no standard error).
// B_simple's spread is over runs (noise_scale_spread below).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "results/scaling_fit.h"
#include "results/seed_bootstrap.h"

namespace batchlab::results {

inline constexpr double kLinearScalingExcess = 0.2;  // Zhang et al.'s 20%

// 2a: (1 + x) B_ref + x E_min / S_min; +infinity when S_min <= 0.
double fit_excess_batch(const ScalingFit& fit, double reference_batch,
                        double excess = kLinearScalingExcess);

// 2b on reached points ascending by batch (the first is the reference); nullopt when no batch's
// samples exceed (1 + x) the reference's (the crossing lies above the largest batch) or with fewer
// than 2 points.
std::optional<double> measured_excess_batch(const std::vector<FitPoint>& points,
                                            double excess = kLinearScalingExcess);

// One definition's uncertainty, named (header).
struct Spread {
  enum class Kind { kInterval, kSeedRange, kRunRange, kStandardError, kNone };
  Kind kind = Kind::kNone;
  Interval range;               // kInterval, kSeedRange, kRunRange; high +infinity when unbounded
  double standard_error = 0.0;  // kStandardError
  int draws = 0;      // the resamples (kInterval), the seeds (kSeedRange) or runs (kRunRange)
  int unbounded = 0;  // of the draws, those with no value in range, ranked +infinity
  std::string why;    // kNone: why there is none
};

struct CriticalBatches {
  double reference_batch = 0.0;  // the smallest fitted batch
  double largest_batch = 0.0;    // the largest fitted batch (a measured crossing's upper limit)
  double fit_excess = 0.0;       // 2a (+infinity when S_min <= 0)
  std::optional<double> measured_excess;  // 2b; nullopt: above largest_batch
  Spread fit_excess_spread, measured_excess_spread;
};

// Both 20% definitions for `fit` of the seed-mean points of `cells` (the fitted batches' reached
// cells, as the report keeps them), each with its spread.
CriticalBatches critical_batches(const ScalingFit& fit, const std::vector<SeedSteps>& cells);

// B_simple's spread over the per-run averages it is the mean of: with kMinSeedsForInterval runs or
// more, 95% from `resamples` bootstrap draws of the runs (the mean recomputed); with 2, the run
// range; with 1 or none, why not. It says how much the series' mean depends on which runs it
// averaged, not how far B_simple is from B_crit: the noise scale drifts within a run, and the
// runs average different batches and rates.
Spread noise_scale_spread(const std::vector<double>& run_means, int resamples = kSeedResamples,
                          uint64_t generator_seed = kSeedBootstrapSeed);

}  // namespace batchlab::results
