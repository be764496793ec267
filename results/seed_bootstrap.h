// A study's S(B) fit (results/scaling_fit.h) when some batch sizes ran with several seeds: one
// point per batch size, and an interval from a bootstrap over the seeds.
//
// One point per batch: the seeds of a batch size measure the same S(B). Fed as points of their own,
// a batch with 3 seeds would weigh 3x a batch with 1 and pull the curve towards the batches that
// happened to get more seeds; as one point each, every batch counts once, as in a one-seed study.
// The point is the geometric mean of the seeds' steps: the fit weighs relative errors (1/S^2) and
// seeds spread steps by factors, so the log scale is this curve's natural one.
//
// What is resampled and why: the residual-scaled standard errors of fit_scaling treat the misfit of
// the curve as independent noise at every point and propagate it to B_crit = E_min / S_min to first
// order. The seed is the unit that is independent here: a seed's cells share its initialisation and
// data order across batch sizes. So the bootstrap draws the distinct seeds with replacement, forms
// every batch's point again from the drawn seeds (each as often as it was drawn) and refits; a seed
// carries all its batches with it, and B_crit's nonlinearity goes into the percentiles as it is. A
// batch that none of the drawn seeds measured is left out of that resample (in a study whose extra
// seeds ran only at some batch sizes, such resamples fit those batches alone and widen the
// interval: the interval says how much the fit rests on the seeds it happened to get).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "results/scaling_fit.h"

namespace batchlab::results {

inline constexpr int kSeedResamples = 1000;
// A fixed generator seed: the same database gives the same interval in every report.
inline constexpr uint64_t kSeedBootstrapSeed = 0x5eedb007;
inline constexpr double kIntervalLow = 0.025, kIntervalHigh = 0.975;  // a central 95% interval

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

struct Interval {
  double low = 0.0, high = 0.0;
};

struct SeedBootstrap {
  int seeds = 0;      // distinct seeds resampled
  int resamples = 0;  // resamples drawn
  int without_b_crit =
      0;  // resamples with no B_crit (fewer than 2 batches, or S_min or E_min <= 0)
  // The 2.5th and 97.5th percentiles over the resamples that gave a B_crit (linear interpolation
  // between order statistics); nullopt when none did.
  std::optional<Interval> b_crit, s_min, e_min;
  // The curve's pointwise interval: at kBandPoints batches evenly spaced on a log axis from the
  // smallest to the largest fitted batch, the same percentiles of S(B) = S_min + E_min / B over
  // those resamples (empty when none gave a B_crit). The figures shade it.
  struct BandPoint {
    double batch = 0.0;
    Interval steps;
  };
  std::vector<BandPoint> band;
};
inline constexpr int kBandPoints = 33;

// The bootstrap over the seeds of `cells` (reached cells of the batches the fit keeps); nullopt
// with fewer than two distinct seeds, where there is nothing to resample.
std::optional<SeedBootstrap> bootstrap_seed_fit(const std::vector<SeedSteps>& cells,
                                                int resamples = kSeedResamples,
                                                uint64_t generator_seed = kSeedBootstrapSeed);

}  // namespace batchlab::results
