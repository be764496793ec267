#include "results/pooled_ratio.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

namespace batchlab::results {

namespace {

double mean(const std::vector<double>& v) {
  double sum = 0.0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

// The values about their mean with the deviations scaled by sqrt(n / (n - 1)) * widen (header).
std::vector<double> widened(const std::vector<double>& v, double widen) {
  const double n = static_cast<double>(v.size()), m = mean(v);
  const double scale = n > 1.0 ? std::sqrt(n / (n - 1.0)) * widen : 1.0;
  std::vector<double> out;
  for (double x : v) out.push_back(m + scale * (x - m));
  return out;
}

// The mean of n draws with replacement; the remainder of mt19937_64's output picks a draw, as
// results/seed_bootstrap.cpp does, so every platform gives the same interval.
double draw_mean(const std::vector<double>& v, std::mt19937_64& generator) {
  double sum = 0.0;
  for (size_t i = 0; i < v.size(); ++i) sum += v[generator() % v.size()];
  return sum / static_cast<double>(v.size());
}

bool enough_seeds(const std::vector<BatchLogSteps>& batches) {
  const auto fewest = static_cast<size_t>(kMinSeedsForInterval);
  return std::all_of(batches.begin(), batches.end(), [&](const BatchLogSteps& b) {
    return b.a.size() >= fewest && b.b.size() >= fewest;
  });
}

// The resampled log ratios (header).
std::vector<double> resampled_logs(const std::vector<BatchLogSteps>& batches, int resamples,
                                   uint64_t generator_seed) {
  double dof = 0.0;
  for (const auto& b : batches) dof += static_cast<double>(b.a.size() + b.b.size()) - 2.0;
  const double widen = student_over_normal(dof);
  std::vector<std::pair<std::vector<double>, std::vector<double>>> draws;
  for (const auto& b : batches) draws.emplace_back(widened(b.a, widen), widened(b.b, widen));
  std::mt19937_64 generator(generator_seed);
  std::vector<double> out;
  for (int r = 0; r < resamples; ++r) {
    double sum = 0.0;
    for (const auto& [a, b] : draws) sum += draw_mean(a, generator) - draw_mean(b, generator);
    out.push_back(sum / static_cast<double>(draws.size()));
  }
  return out;
}

}  // namespace

std::optional<PooledRatio> pooled_ratio(const std::vector<BatchLogSteps>& batches, int resamples,
                                        uint64_t generator_seed) {
  if (batches.empty()) return std::nullopt;
  double sum = 0.0;
  for (const auto& b : batches) {
    if (b.a.empty() || b.b.empty()) {
      throw std::invalid_argument("pooled_ratio: a batch without seeds on one side");
    }
    sum += mean(b.a) - mean(b.b);
  }
  PooledRatio out;
  out.batches = static_cast<int>(batches.size());
  out.ratio = std::exp(sum / static_cast<double>(batches.size()));
  if (!enough_seeds(batches) || resamples < 1) return out;
  const auto logs = resampled_logs(batches, resamples, generator_seed);
  std::vector<double> ratios;
  size_t at_most_one = 0, at_least_one = 0;
  for (double l : logs) {
    ratios.push_back(std::exp(l));
    at_most_one += l <= 0.0 ? 1 : 0;
    at_least_one += l >= 0.0 ? 1 : 0;
  }
  out.interval = percentile_interval(ratios);
  const double n = static_cast<double>(logs.size());
  out.p = std::min(1.0, 2.0 * static_cast<double>(std::min(at_most_one, at_least_one)) / n);
  out.resamples = resamples;
  return out;
}

}  // namespace batchlab::results
