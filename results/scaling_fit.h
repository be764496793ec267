// The steps-to-target curve of McCandlish et al. 2018, S(B) = S_min + E_min / B, fitted to the
// measured steps of a study's cells: weighted least squares of S on x = 1/B with weights 1/S^2 (a
// relative error, equal at every batch), intercept S_min, slope E_min, critical batch
// B_crit = E_min / S_min.
//
// Uncertainty: the weights fix only the relative spread between points, so the covariance of
// (S_min, E_min) is (X'WX)^-1 scaled by the weighted residual variance sum(w r^2) / (n - 2); the
// standard errors are the square roots of its diagonal, and B_crit's follows by first-order error
// propagation including the covariance term:
//   (se_B / B)^2 = (se_E / E)^2 + (se_S / S)^2 - 2 cov(S, E) / (S E).
// With two distinct batch sizes the curve passes through both points and no error is given.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace batchlab::results {

struct FitPoint {
  double batch = 0.0;
  double steps = 0.0;     // steps to target (for a censored point: the cap, not a measurement)
  bool censored = false;  // never reached the target: excluded from the fit
  std::string label;      // names an excluded point in messages
};

struct ScalingFit {
  int points = 0;   // points fitted
  int batches = 0;  // distinct batch sizes among them
  double s_min = 0.0, e_min = 0.0;
  std::optional<double> b_crit;  // E_min / S_min, when S_min > 0 and E_min > 0
  std::optional<double> s_min_se, e_min_se, b_crit_se;
  double cov_s_e = 0.0;               // covariance of (S_min, E_min)
  std::vector<std::string> excluded;  // labels of the censored points left out
};

// Fits the reached points; nullopt when fewer than two distinct batch sizes reached. Throws
// std::invalid_argument for a point with a non-positive batch or steps (a bug in the caller).
std::optional<ScalingFit> fit_scaling(const std::vector<FitPoint>& points);

// S(B) of the fitted curve.
double fitted_steps(const ScalingFit& fit, double batch);

}  // namespace batchlab::results
