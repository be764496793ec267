#include "results/critical_batch.h"

#include <cmath>
#include <limits>

namespace batchlab::results {

namespace {

constexpr double kUnbounded = std::numeric_limits<double>::infinity();

}  // namespace

double fit_excess_batch(const ScalingFit& fit, double reference_batch, double excess) {
  if (!(fit.s_min > 0.0)) return kUnbounded;
  return (1.0 + excess) * reference_batch + excess * fit.e_min / fit.s_min;
}

std::optional<double> measured_excess_batch(const std::vector<FitPoint>& points, double excess) {
  if (points.size() < 2) return std::nullopt;
  const double reference = points.front().steps * points.front().batch;
  const double level = std::log(1.0 + excess);
  double previous_log_ratio = 0.0, previous_log_batch = std::log(points.front().batch);
  for (size_t i = 1; i < points.size(); ++i) {
    const double log_ratio = std::log(points[i].steps * points[i].batch / reference);
    const double log_batch = std::log(points[i].batch);
    if (log_ratio >= level) {
      const double t = (level - previous_log_ratio) / (log_ratio - previous_log_ratio);
      return std::exp(previous_log_batch + t * (log_batch - previous_log_batch));
    }
    previous_log_ratio = log_ratio;
    previous_log_batch = log_batch;
  }
  return std::nullopt;
}

CriticalBatches critical_batches(const ScalingFit& fit, const std::vector<SeedSteps>& cells) {
  const auto points = seed_mean_points(cells);
  CriticalBatches out;
  if (points.empty()) return out;
  out.reference_batch = points.front().batch;
  out.largest_batch = points.back().batch;
  out.fit_excess = fit_excess_batch(fit, out.reference_batch);
  out.measured_excess = measured_excess_batch(points);
  const auto draws = resample_seed_points(cells);
  if (!draws) return out;
  std::vector<double> fitted, measured;
  for (const auto& draw : *draws) {
    fitted.push_back(fit_excess_batch(fit_scaling(draw).value(), out.reference_batch));
    measured.push_back(measured_excess_batch(draw).value_or(kUnbounded));
  }
  out.fit_excess_interval = percentile_interval(fitted);
  out.measured_excess_interval = percentile_interval(measured);
  return out;
}

}  // namespace batchlab::results
