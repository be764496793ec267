// A study's S(B) fit (results/scaling_fit.h) when batch sizes ran with several seeds: one point per
// batch size, and a 95% interval from a bootstrap over the seeds when every batch has enough.
//
// One point per batch: the seeds of a batch size measure the same S(B). Fed as points of their own,
// a batch with 3 seeds would weigh 3x a batch with 1 and pull the curve towards the batches that
// happened to get more seeds; as one point each, every batch counts once, as in a one-seed study.
// The point is the geometric mean of the seeds' steps: the fit weighs relative errors (1/S^2) and
// seeds spread steps by factors, so the log scale is this curve's natural one.
//
// What is resampled and why: the residual-scaled standard errors of fit_scaling treat the misfit of
// the curve as independent noise at every point and propagate it to B_crit = E_min / S_min to first
// order. The bootstrap instead measures how the fit moves with the seeds it got, following the
// design: at every batch size its own seeds are drawn with replacement, as many as it ran,
// independently of the other batches (every batch keeps its point, so a resample refits the same
// batches), and the curve is refitted; B_crit's nonlinearity goes into the percentiles as it is.
// Few seeds make a plain percentile interval too narrow, for two reasons: a draw from n values
// spreads less than the values do (its variance is (n - 1)/n of theirs), and the spread itself is
// estimated from few seeds. So every batch's log-steps are drawn about their mean with the
// deviations scaled by sqrt(n / (n - 1)) (Davison and Hinkley 1997, section 3.2.3) and by
// t / z, the 97.5% quantile of Student's t with sum(n_b - 1) degrees of freedom over the normal's
// (1.14 for 3 seeds at 5 batches, 1.04 for 5 seeds at 8). On simulated studies plain resampling
// covers 82-85% at 3 seeds and 87-88% at 5 (on 5 batches) where it says 95%; with both factors
// 91-93% at 3 seeds and 93-96% at 5 (docs/analysis.md, results/bootstrap_coverage.h).
//
// Every resample counts: one whose curve has no critical batch is not dropped (that would narrow
// the interval towards the resamples that happened to fit) but ranked where its B_crit lies, above
// every finite one when S_min <= 0 < E_min (the floor vanished: B_crit unbounded) and at 0 when
// E_min <= 0 (no gain from batch at all). An upper percentile that lands on an unbounded resample
// is +infinity: the data do not bound B_crit from above.
//
// Too few seeds: with 2 seeds a batch has only 3 distinct resamples, and a percentile of those is
// no 95% interval of anything. So no interval is computed unless every batch ran at least
// kMinSeedsForInterval seeds; the study report shows the spread of per-seed fits instead
// (results/seed_range.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "results/scaling_fit.h"

namespace batchlab::results {

inline constexpr int kSeedResamples = 1000;
// A fixed generator seed: the same database gives the same interval in every report.
inline constexpr uint64_t kSeedBootstrapSeed = 0x5eedb007;
inline constexpr double kIntervalLow = 0.025, kIntervalHigh = 0.975;  // a central 95% interval
inline constexpr int kMinSeedsForInterval = 3;

// One reached cell: a seed's steps to target at a batch size.
struct SeedSteps {
  double batch = 0.0;
  int64_t seed = 0;
  double steps = 0.0;
};

// One reached FitPoint per batch size, ascending, labelled "batch B": the geometric mean over the
// batch's seeds of each seed's steps (a seed with several cells at one batch: their geometric mean
// first, so every seed counts once). Throws std::invalid_argument for a non-positive batch or
// steps.
std::vector<FitPoint> seed_mean_points(const std::vector<SeedSteps>& cells);

// batch -> seed -> the mean log steps of that seed's cells at that batch (a seed with several cells
// counts once). Throws std::invalid_argument for a non-positive batch or steps.
using SeedLogSteps = std::map<double, std::map<int64_t, double>>;
SeedLogSteps seed_log_steps(const std::vector<SeedSteps>& cells);

// high is +infinity when the upper end is unbounded.
struct Interval {
  double low = 0.0, high = 0.0;
};

// The 97.5% quantile of Student's t with `dof` degrees of freedom over the normal's (1.96): how
// much the bootstrap widens the seeds' deviations. A series expansion, within 1% of the exact value
// at 3 degrees of freedom and 0.1% from 6 up (a bootstrap has at least 4: 2 batches of 3 seeds).
double student_over_normal(double dof);

// B_crit of a fit as the bootstrap ranks it: E_min / S_min when both are positive, +infinity when
// only E_min is (S_min <= 0: no floor, the critical batch is unbounded), 0 when E_min <= 0.
double ranked_b_crit(const ScalingFit& fit);

struct SeedBootstrap {
  int seeds = 0;            // distinct seeds over all batches
  int min_batch_seeds = 0;  // the fewest seeds any batch ran (>= kMinSeedsForInterval)
  int resamples = 0;        // resamples drawn, every one in the percentiles
  int without_b_crit = 0;   // of them, resamples whose curve has no B_crit (ranked_b_crit)
  int unbounded = 0;        // of those, the ones ranked +infinity (S_min <= 0)
  // The 2.5th and 97.5th percentiles over every resample (linear interpolation between order
  // statistics; an end that touches an unbounded resample is +infinity).
  Interval b_crit, s_min, e_min;
  // The curve's pointwise interval: at kBandPoints batches evenly spaced on a log axis from the
  // smallest to the largest fitted batch, the same percentiles of S(B) = S_min + E_min / B. The
  // figures shade it.
  struct BandPoint {
    double batch = 0.0;
    Interval steps;
  };
  std::vector<BandPoint> band;
};
inline constexpr int kBandPoints = 33;

// The central 95% interval (kIntervalLow, kIntervalHigh percentiles) of every value, +infinity
// included: linear interpolation between order statistics, an end that touches +infinity is
// +infinity. Throws std::invalid_argument for no values.
Interval percentile_interval(std::vector<double> values);

// The points of `resamples` draws of the seeds of `cells` (one point per batch, ascending, as
// seed_mean_points but from the widened draws above); nullopt as resample_seed_fits. The critical
// batch read off the measured steps (results/critical_batch.h) is resampled from these.
std::optional<std::vector<std::vector<FitPoint>>> resample_seed_points(
    const std::vector<SeedSteps>& cells, int resamples = kSeedResamples,
    uint64_t generator_seed = kSeedBootstrapSeed);

// The refitted curves of `resamples` draws of the seeds of `cells`, every one kept (two batches or
// more always fit); nullopt with fewer than two batch sizes or when a batch ran fewer than
// kMinSeedsForInterval seeds. `batchlab compare` pairs two series' resamples drawn from different
// generator seeds.
std::optional<std::vector<ScalingFit>> resample_seed_fits(
    const std::vector<SeedSteps>& cells, int resamples = kSeedResamples,
    uint64_t generator_seed = kSeedBootstrapSeed);

// The bootstrap over the seeds of `cells` (reached cells of the batches the fit keeps); nullopt
// with fewer than two batch sizes or when a batch ran fewer than kMinSeedsForInterval seeds.
std::optional<SeedBootstrap> bootstrap_seed_fit(const std::vector<SeedSteps>& cells,
                                                int resamples = kSeedResamples,
                                                uint64_t generator_seed = kSeedBootstrapSeed);

}  // namespace batchlab::results
