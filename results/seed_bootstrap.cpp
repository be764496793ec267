#include "results/seed_bootstrap.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace batchlab::results {

namespace {

constexpr double kUnbounded = std::numeric_limits<double>::infinity();

// One batch's seeds as the bootstrap draws them: their log steps about the batch's mean, the
// deviations scaled by sqrt(n / (n - 1)) so that a draw of n spreads as the seeds do (header).
struct BatchDraws {
  double batch = 0.0;
  std::vector<double> log_steps;
};

std::vector<BatchDraws> batch_draws(const SeedLogSteps& logs) {
  double dof = 0.0;  // the seeds' spread is estimated with sum(n_b - 1) degrees of freedom
  for (const auto& [batch, seeds] : logs) dof += static_cast<double>(seeds.size()) - 1.0;
  const double widen = student_over_normal(dof);
  std::vector<BatchDraws> out;
  for (const auto& [batch, seeds] : logs) {
    const auto n = static_cast<double>(seeds.size());
    double mean = 0.0;
    for (const auto& [seed, l] : seeds) mean += l / n;
    const double scale = std::sqrt(n / (n - 1.0)) * widen;
    BatchDraws d{batch, {}};
    for (const auto& [seed, l] : seeds) d.log_steps.push_back(mean + scale * (l - mean));
    out.push_back(std::move(d));
  }
  return out;
}

// The p-quantile of sorted values, interpolated linearly between the order statistics at
// p (n - 1) (the default of R and numpy), so a reader can recompute it from the resamples; +inf
// when either order statistic is (an unbounded resample reaches the quantile).
double sorted_quantile(const std::vector<double>& sorted, double p) {
  const double h = p * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  if (std::isinf(sorted[hi])) return h > static_cast<double>(lo) ? kUnbounded : sorted[lo];
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

Interval central_interval(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return {sorted_quantile(values, kIntervalLow), sorted_quantile(values, kIntervalHigh)};
}

std::vector<double> band_batches(const std::vector<BatchDraws>& batches) {
  const double low = batches.front().batch, high = batches.back().batch;
  std::vector<double> out;
  for (int i = 0; i < kBandPoints; ++i) {
    out.push_back(low * std::pow(high / low, i / static_cast<double>(kBandPoints - 1)));
  }
  return out;
}

// One resample: every batch's point from as many draws of its seeds as it ran.
std::vector<FitPoint> draw_points(const std::vector<BatchDraws>& batches,
                                  std::mt19937_64& generator) {
  std::vector<FitPoint> points;
  for (const auto& b : batches) {
    const size_t n = b.log_steps.size();
    double sum = 0.0;
    // The remainder rather than std::uniform_int_distribution, whose algorithm each standard
    // library chooses: mt19937_64 is the same everywhere, so the interval is too (the bias, of
    // order seeds / 2^64, is nil).
    for (size_t i = 0; i < n; ++i) sum += b.log_steps[generator() % n];
    points.push_back({b.batch, std::exp(sum / static_cast<double>(n)), false, ""});
  }
  return points;
}

}  // namespace

SeedLogSteps seed_log_steps(const std::vector<SeedSteps>& cells) {
  std::map<double, std::map<int64_t, std::pair<double, int>>> sums;
  for (const auto& c : cells) {
    if (!(c.batch > 0.0) || !(c.steps > 0.0)) {
      throw std::invalid_argument("seed steps: batch and steps must be positive");
    }
    auto& [sum, n] = sums[c.batch][c.seed];
    sum += std::log(c.steps);
    ++n;
  }
  SeedLogSteps out;
  for (const auto& [batch, seeds] : sums) {
    for (const auto& [seed, s] : seeds) out[batch][seed] = s.first / s.second;
  }
  return out;
}

std::vector<FitPoint> seed_mean_points(const std::vector<SeedSteps>& cells) {
  std::vector<FitPoint> points;
  for (const auto& [batch, seeds] : seed_log_steps(cells)) {
    double sum = 0.0;
    for (const auto& [seed, log_steps] : seeds) sum += log_steps;
    points.push_back({batch, std::exp(sum / static_cast<double>(seeds.size())), false,
                      fmt::format("batch {:.0f}", batch)});
  }
  return points;
}

double student_over_normal(double dof) {
  // Cornish-Fisher expansion of t's quantile in powers of 1/dof (Abramowitz and Stegun 26.7.5).
  const double z = 1.959963984540054, z2 = z * z;
  const double g1 = (z2 + 1.0) / 4.0;
  const double g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) / 96.0;
  const double g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) / 384.0;
  return 1.0 + g1 / dof + g2 / (dof * dof) + g3 / (dof * dof * dof);
}

double ranked_b_crit(const ScalingFit& fit) {
  if (fit.b_crit) return *fit.b_crit;
  return fit.e_min > 0.0 ? kUnbounded : 0.0;
}

namespace {

// The fewest seeds any batch of `logs` ran and the distinct seeds over all batches.
std::pair<int, int> seed_counts(const SeedLogSteps& logs) {
  int fewest = std::numeric_limits<int>::max();
  std::map<int64_t, int> seeds;
  for (const auto& [batch, batch_seeds] : logs) {
    fewest = std::min(fewest, static_cast<int>(batch_seeds.size()));
    for (const auto& [seed, l] : batch_seeds) ++seeds[seed];
  }
  return {fewest, static_cast<int>(seeds.size())};
}

}  // namespace

Interval percentile_interval(std::vector<double> values) {
  if (values.empty()) throw std::invalid_argument("percentile_interval: no values");
  return central_interval(std::move(values));
}

std::optional<std::vector<std::vector<FitPoint>>> resample_seed_points(
    const std::vector<SeedSteps>& cells, int resamples, uint64_t generator_seed) {
  if (resamples < 1) throw std::invalid_argument("bootstrap_seed_fit: resamples must be positive");
  const SeedLogSteps logs = seed_log_steps(cells);
  if (logs.size() < 2 || seed_counts(logs).first < kMinSeedsForInterval) return std::nullopt;
  const std::vector<BatchDraws> batches = batch_draws(logs);
  std::mt19937_64 generator(generator_seed);
  std::vector<std::vector<FitPoint>> out;
  out.reserve(static_cast<size_t>(resamples));
  for (int r = 0; r < resamples; ++r) out.push_back(draw_points(batches, generator));
  return out;
}

std::optional<std::vector<ScalingFit>> resample_seed_fits(const std::vector<SeedSteps>& cells,
                                                          int resamples, uint64_t generator_seed) {
  const auto draws = resample_seed_points(cells, resamples, generator_seed);
  if (!draws) return std::nullopt;
  std::vector<ScalingFit> fits;
  fits.reserve(draws->size());
  // Every batch has a point, and there are at least two: the fit always exists.
  for (const auto& points : *draws) fits.push_back(fit_scaling(points).value());
  return fits;
}

std::optional<SeedBootstrap> bootstrap_seed_fit(const std::vector<SeedSteps>& cells, int resamples,
                                                uint64_t generator_seed) {
  const auto fits = resample_seed_fits(cells, resamples, generator_seed);
  if (!fits) return std::nullopt;
  const SeedLogSteps logs = seed_log_steps(cells);
  SeedBootstrap out;
  std::tie(out.min_batch_seeds, out.seeds) = seed_counts(logs);
  out.resamples = resamples;
  const std::vector<double> band_at = band_batches(batch_draws(logs));
  std::vector<double> b_crit, s_min, e_min;
  std::vector<std::vector<double>> band(band_at.size());
  for (const ScalingFit& fit : *fits) {
    if (!fit.b_crit) ++out.without_b_crit;
    b_crit.push_back(ranked_b_crit(fit));
    if (std::isinf(b_crit.back())) ++out.unbounded;
    s_min.push_back(fit.s_min);
    e_min.push_back(fit.e_min);
    for (size_t i = 0; i < band_at.size(); ++i) band[i].push_back(fitted_steps(fit, band_at[i]));
  }
  out.b_crit = central_interval(std::move(b_crit));
  out.s_min = central_interval(std::move(s_min));
  out.e_min = central_interval(std::move(e_min));
  for (size_t i = 0; i < band_at.size(); ++i) {
    out.band.push_back({band_at[i], central_interval(std::move(band[i]))});
  }
  return out;
}

}  // namespace batchlab::results
