// Does S(B) = S_min + E_min / B fit the measured steps, or do the batches' means miss the curve by
// more than their seeds' spread allows? The pure-error lack-of-fit F test (Draper and Smith,
// Applied Regression Analysis, 3rd ed., section 2.1): with several seeds at each batch, the
// residual of the batch means around the curve is split from the seeds' spread around their own
// batch mean, which no curve can explain:
//   SS_lack = sum_b n_b (mean_b - fit_b)^2        on k - 2 degrees of freedom (k batches, 2 params)
//   SS_pure = sum_b sum_i (y_bi - mean_b)^2       on n - k degrees of freedom (n seeds in all)
//   F = (SS_lack / (k - 2)) / (SS_pure / (n - k)),  p = P(F(k - 2, n - k) >= F).
// y = log steps: the fit's weights 1/S^2 make its error relative, and in log steps a relative error
// is additive, so the seeds' spread is comparable across batches (steps at 16 and 512 differ 30x).
// The fit itself is weighted least squares on steps, not least squares on log steps, so the test
// is approximate; tests/results/lack_of_fit_test.cpp measures its false-alarm rate on data drawn
// from the curve (near the nominal 5%).
//
// Why it matters: B_crit is read off the curve. A series whose steps fall faster than 1/B between
// two batches (more than 2x a doubling, which S_min + E_min / B cannot do) or flatten abruptly is
// fitted anyway; its S_min, B_crit and their bootstrap intervals are then those of the nearest
// curve of the wrong shape, and the report says so.
#pragma once

#include <optional>
#include <vector>

#include "results/scaling_fit.h"
#include "results/seed_bootstrap.h"

namespace batchlab::results {

// The level below which the report says a curve does not fit (and the test's false-alarm rate).
inline constexpr double kLackOfFitLevel = 0.05;

struct LackOfFit {
  double f = 0.0;
  int dof_lack = 0;  // batches - 2
  int dof_pure = 0;  // seeds over all batches - batches
  double p = 1.0;    // P(F(dof_lack, dof_pure) >= f)
  // The batch whose mean lies furthest from the curve (in log steps), for the message.
  double worst_batch = 0.0;
  double worst_measured = 0.0;  // the geometric mean of its seeds' steps
  double worst_fitted = 0.0;    // S(B) there
};

// The test for `fit` over the per-seed steps it was fitted to (a seed with several cells at one
// batch counts once, at their geometric mean, as in seed_mean_points). nullopt where it cannot be
// computed: fewer than 3 batches (no degrees of freedom left for lack of fit), no batch with 2 or
// more seeds, seeds that agree exactly at every batch (no pure error to compare with), or a curve
// that predicts no positive steps at a measured batch. Throws std::invalid_argument for a
// non-positive batch or steps.
std::optional<LackOfFit> lack_of_fit(const ScalingFit& fit, const std::vector<SeedSteps>& cells);

// P(F >= f) for the F distribution with (d1, d2) degrees of freedom; 1 for f <= 0. Throws
// std::invalid_argument for non-positive degrees of freedom.
double f_distribution_sf(double f, double d1, double d2);

}  // namespace batchlab::results
