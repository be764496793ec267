#include "results/seed_bootstrap.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <utility>

namespace batchlab::results {

namespace {

// batch -> seed -> the mean log steps of that seed's cells at that batch.
using SeedLogSteps = std::map<double, std::map<int64_t, double>>;

SeedLogSteps seed_log_steps(const std::vector<SeedSteps>& cells) {
  std::map<double, std::map<int64_t, std::pair<double, int>>> sums;
  for (const auto& c : cells) {
    if (!(c.batch > 0.0) || !(c.steps > 0.0)) {
      throw std::invalid_argument("seed_mean_points: batch and steps must be positive");
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

// Every batch's point from the seeds drawn (each weighted by how often it was drawn); a batch that
// no drawn seed measured has no point. The point estimate draws every seed once.
std::vector<FitPoint> points_of_draw(const SeedLogSteps& logs, const std::map<int64_t, int>& draw) {
  std::vector<FitPoint> points;
  for (const auto& [batch, seeds] : logs) {
    double sum = 0.0;
    int n = 0;
    for (const auto& [seed, log_steps] : seeds) {
      auto it = draw.find(seed);
      if (it == draw.end()) continue;
      sum += it->second * log_steps;
      n += it->second;
    }
    if (n == 0) continue;
    points.push_back({batch, std::exp(sum / n), false, fmt::format("batch {:.0f}", batch)});
  }
  return points;
}

std::vector<int64_t> distinct_seeds(const std::vector<SeedSteps>& cells) {
  std::set<int64_t> seeds;
  for (const auto& c : cells) seeds.insert(c.seed);
  return {seeds.begin(), seeds.end()};
}

// The p-quantile of sorted values, interpolated linearly between the order statistics at
// p (n - 1) (the default of R and numpy), so a reader can recompute it from the resamples.
double sorted_quantile(const std::vector<double>& sorted, double p) {
  const double h = p * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

Interval central_interval(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return {sorted_quantile(values, kIntervalLow), sorted_quantile(values, kIntervalHigh)};
}

}  // namespace

std::vector<FitPoint> seed_mean_points(const std::vector<SeedSteps>& cells) {
  std::map<int64_t, int> every_seed_once;
  for (int64_t seed : distinct_seeds(cells)) every_seed_once[seed] = 1;
  return points_of_draw(seed_log_steps(cells), every_seed_once);
}

std::optional<SeedBootstrap> bootstrap_seed_fit(const std::vector<SeedSteps>& cells, int resamples,
                                                uint64_t generator_seed) {
  if (resamples < 1) throw std::invalid_argument("bootstrap_seed_fit: resamples must be positive");
  const SeedLogSteps logs = seed_log_steps(cells);
  // Ascending, so the draws depend on the seeds measured and not on the order of the cells.
  const std::vector<int64_t> seeds = distinct_seeds(cells);
  if (seeds.size() < 2) return std::nullopt;
  SeedBootstrap out;
  out.seeds = static_cast<int>(seeds.size());
  out.resamples = resamples;
  std::mt19937_64 generator(generator_seed);
  std::vector<double> b_crit, s_min, e_min;
  // The band's batches: the fitted range on a log grid.
  std::vector<double> band_batches;
  const double low = logs.begin()->first, high = logs.rbegin()->first;
  for (int i = 0; i < kBandPoints; ++i) {
    band_batches.push_back(low * std::pow(high / low, i / static_cast<double>(kBandPoints - 1)));
  }
  std::vector<std::vector<double>> band(band_batches.size());
  std::map<int64_t, int> draw;
  for (int r = 0; r < resamples; ++r) {
    draw.clear();
    // The remainder rather than std::uniform_int_distribution, whose algorithm each standard
    // library chooses: mt19937_64 is the same everywhere, so the interval is too (the bias, of
    // order seeds / 2^64, is nil).
    for (size_t i = 0; i < seeds.size(); ++i) ++draw[seeds[generator() % seeds.size()]];
    const auto fit = fit_scaling(points_of_draw(logs, draw));
    if (!fit || !fit->b_crit) {
      ++out.without_b_crit;
      continue;
    }
    b_crit.push_back(*fit->b_crit);
    s_min.push_back(fit->s_min);
    e_min.push_back(fit->e_min);
    for (size_t i = 0; i < band_batches.size(); ++i) {
      band[i].push_back(fit->s_min + fit->e_min / band_batches[i]);
    }
  }
  if (!b_crit.empty()) {
    out.b_crit = central_interval(std::move(b_crit));
    out.s_min = central_interval(std::move(s_min));
    out.e_min = central_interval(std::move(e_min));
    for (size_t i = 0; i < band_batches.size(); ++i) {
      out.band.push_back({band_batches[i], central_interval(std::move(band[i]))});
    }
  }
  return out;
}

}  // namespace batchlab::results
