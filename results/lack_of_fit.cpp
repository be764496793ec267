#include "results/lack_of_fit.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <utility>

#include "results/student_t.h"

namespace batchlab::results {

double f_distribution_sf(double f, double d1, double d2) {
  if (!(d1 > 0.0) || !(d2 > 0.0)) {
    throw std::invalid_argument("f_distribution_sf: degrees of freedom must be positive");
  }
  if (!(f > 0.0)) return 1.0;
  if (std::isinf(f)) return 0.0;
  // P(F >= f) = I_x(d2 / 2, d1 / 2) with x = d2 / (d2 + d1 f).
  return regularized_incomplete_beta(d2 / 2.0, d1 / 2.0, d2 / (d2 + d1 * f));
}

std::optional<LackOfFit> lack_of_fit(const ScalingFit& fit, const std::vector<SeedSteps>& cells) {
  const auto by_batch = seed_log_steps(cells);
  const int batches = static_cast<int>(by_batch.size());
  int seeds = 0;
  double ss_lack = 0.0, ss_pure = 0.0, worst = -1.0;
  LackOfFit out;
  for (const auto& [batch, per_seed] : by_batch) {
    const double predicted = fitted_steps(fit, batch);
    if (!(predicted > 0.0)) return std::nullopt;
    const double n = static_cast<double>(per_seed.size());
    double mean = 0.0;
    for (const auto& [seed, y] : per_seed) mean += y / n;
    for (const auto& [seed, y] : per_seed) ss_pure += (y - mean) * (y - mean);
    const double miss = mean - std::log(predicted);
    ss_lack += n * miss * miss;
    seeds += static_cast<int>(per_seed.size());
    if (std::fabs(miss) > worst) {
      worst = std::fabs(miss);
      out.worst_batch = batch;
      out.worst_measured = std::exp(mean);
      out.worst_fitted = predicted;
    }
  }
  out.dof_lack = batches - 2;
  out.dof_pure = seeds - batches;
  if (out.dof_lack < 1 || out.dof_pure < 1 || !(ss_pure > 0.0)) return std::nullopt;
  out.f = (ss_lack / out.dof_lack) / (ss_pure / out.dof_pure);
  out.p = f_distribution_sf(out.f, out.dof_lack, out.dof_pure);
  return out;
}

}  // namespace batchlab::results
