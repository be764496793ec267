#include "results/scaling_fit.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

namespace batchlab::results {

namespace {

// Weighted sums of the regression of y = S on x = 1/B with w = 1/S^2, centred on the weighted mean
// of x so that S_min is not the difference of two large numbers when the batches span decades.
struct WeightedSums {
  double w = 0.0, x_mean = 0.0, y_mean = 0.0, sxx = 0.0, sxy = 0.0;
};

WeightedSums sums_of(const std::vector<FitPoint>& reached) {
  WeightedSums s;
  for (const auto& p : reached) {
    const double w = 1.0 / (p.steps * p.steps);
    s.w += w;
    s.x_mean += w / p.batch;
    s.y_mean += w * p.steps;
  }
  s.x_mean /= s.w;
  s.y_mean /= s.w;
  for (const auto& p : reached) {
    const double w = 1.0 / (p.steps * p.steps);
    const double dx = 1.0 / p.batch - s.x_mean;
    s.sxx += w * dx * dx;
    s.sxy += w * dx * (p.steps - s.y_mean);
  }
  return s;
}

// Standard errors from the residual-scaled covariance; B_crit's by error propagation.
void add_uncertainty(const std::vector<FitPoint>& reached, const WeightedSums& s, ScalingFit& fit) {
  const int dof = fit.points - 2;
  if (dof <= 0) return;
  double chi2 = 0.0;
  for (const auto& p : reached) {
    const double r = p.steps - fitted_steps(fit, p.batch);
    chi2 += r * r / (p.steps * p.steps);
  }
  const double scale = chi2 / dof;
  const double var_e = scale / s.sxx;
  const double var_s = scale * (1.0 / s.w + s.x_mean * s.x_mean / s.sxx);
  fit.cov_s_e = -scale * s.x_mean / s.sxx;
  fit.s_min_se = std::sqrt(var_s);
  fit.e_min_se = std::sqrt(var_e);
  if (fit.b_crit) {
    const double rel2 = var_e / (fit.e_min * fit.e_min) + var_s / (fit.s_min * fit.s_min) -
                        2.0 * fit.cov_s_e / (fit.s_min * fit.e_min);
    fit.b_crit_se = *fit.b_crit * std::sqrt(std::max(rel2, 0.0));
  }
}

}  // namespace

double fitted_steps(const ScalingFit& fit, double batch) { return fit.s_min + fit.e_min / batch; }

std::optional<ScalingFit> fit_scaling(const std::vector<FitPoint>& points) {
  ScalingFit fit;
  std::vector<FitPoint> reached;
  std::set<double> batches;
  for (const auto& p : points) {
    if (!(p.batch > 0.0) || (!p.censored && !(p.steps > 0.0))) {
      throw std::invalid_argument("fit_scaling: batch and steps must be positive");
    }
    if (p.censored) {
      fit.excluded.push_back(p.label);
      continue;
    }
    reached.push_back(p);
    batches.insert(p.batch);
  }
  if (batches.size() < 2) return std::nullopt;
  fit.points = static_cast<int>(reached.size());
  fit.batches = static_cast<int>(batches.size());
  const WeightedSums s = sums_of(reached);
  fit.e_min = s.sxy / s.sxx;
  fit.s_min = s.y_mean - fit.e_min * s.x_mean;
  if (fit.s_min > 0.0 && fit.e_min > 0.0) fit.b_crit = fit.e_min / fit.s_min;
  add_uncertainty(reached, s, fit);
  return fit;
}

}  // namespace batchlab::results
