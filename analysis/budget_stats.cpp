#include "analysis/budget_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "results/student_t.h"

namespace batchlab::analysis {

namespace {

constexpr int kBudgetResamples = 4000;

double budget_mean_of(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double budget_variance_of(const std::vector<double>& v) {
  const double m = budget_mean_of(v);
  double ss = 0.0;
  for (double x : v) ss += (x - m) * (x - m);
  return ss / static_cast<double>(v.size() - 1);
}

// Least-squares slope of y on x.
double budget_slope_of(const std::vector<double>& x, const std::vector<double>& y) {
  const double mx = budget_mean_of(x), my = budget_mean_of(y);
  double sxy = 0.0, sxx = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
  }
  return sxy / sxx;
}

double budget_slope_of_means(const SeedsByBatch& data) {
  std::vector<double> x, y;
  for (const auto& [batch, values] : data) {
    x.push_back(std::log2(static_cast<double>(batch)));
    y.push_back(budget_mean_of(values));
  }
  return budget_slope_of(x, y);
}

SeedsByBatch budget_resample(const SeedsByBatch& data, std::mt19937_64& rng) {
  SeedsByBatch out;
  for (const auto& [batch, values] : data) {
    std::uniform_int_distribution<size_t> pick(0, values.size() - 1);
    auto& drawn = out[batch];
    for (size_t i = 0; i < values.size(); ++i) drawn.push_back(values[pick(rng)]);
  }
  return out;
}

SeedsByBatch budget_usable(const SeedsByBatch& data) {
  SeedsByBatch out;
  for (const auto& [batch, values] : data) {
    if (!values.empty()) out[batch] = values;
  }
  return out;
}

size_t budget_fewest_seeds(const SeedsByBatch& data) {
  size_t n = SIZE_MAX;
  for (const auto& [batch, values] : data) n = std::min(n, values.size());
  return n == SIZE_MAX ? 0 : n;
}

void budget_percentile_bounds(std::vector<double> draws, Slope& out) {
  std::sort(draws.begin(), draws.end());
  const auto at_or_below = std::upper_bound(draws.begin(), draws.end(), 0.0) - draws.begin();
  const auto at_or_above = draws.end() - std::lower_bound(draws.begin(), draws.end(), 0.0);
  const double far = static_cast<double>(std::min(at_or_below, at_or_above));
  out.p = std::min(1.0, 2.0 * (far + 1.0) / (static_cast<double>(draws.size()) + 1.0));
  const auto at = [&](double q) {
    const double pos = q * static_cast<double>(draws.size() - 1);
    const auto lo = static_cast<size_t>(std::floor(pos));
    const auto hi = std::min(lo + 1, draws.size() - 1);
    return draws[lo] + (pos - static_cast<double>(lo)) * (draws[hi] - draws[lo]);
  };
  out.low = at(0.025);
  out.high = at(0.975);
}

}  // namespace

std::optional<SeedInterval> seed_interval(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  SeedInterval out;
  out.n = values.size();
  out.mean = budget_mean_of(values);
  if (values.size() == 2) {
    out.low = std::min(values[0], values[1]);
    out.high = std::max(values[0], values[1]);
  } else if (values.size() >= 3) {
    const double half = results::student_t_quantile(0.975, static_cast<double>(values.size() - 1)) *
                        std::sqrt(budget_variance_of(values) / static_cast<double>(values.size()));
    out.low = out.mean - half;
    out.high = out.mean + half;
    out.is_95 = true;
  }
  return out;
}

std::optional<Difference> welch_difference(const std::vector<double>& a,
                                           const std::vector<double>& b) {
  if (a.size() < 2 || b.size() < 2) return std::nullopt;
  const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
  const double va = budget_variance_of(a), vb = budget_variance_of(b);
  Difference d;
  d.estimate = budget_mean_of(a) - budget_mean_of(b);
  d.min_seeds = std::min(a.size(), b.size());
  const double se = std::sqrt(va / na + vb / nb);
  const double dof = results::welch_dof(va, na, vb, nb);
  const double q = results::student_t_quantile(0.975, dof);
  d.low = d.estimate - q * se;
  d.high = d.estimate + q * se;
  if (se > 0.0) {
    d.p = 2.0 * (1.0 - results::student_t_cdf(std::abs(d.estimate) / se, dof));
  } else {
    d.p = d.estimate == 0.0 ? 1.0 : 0.0;
  }
  return d;
}

void holm(std::vector<FamilyTest*> family, double alpha) {
  family.erase(std::remove_if(family.begin(), family.end(),
                              [](const FamilyTest* d) { return d->min_seeds < 3; }),
               family.end());
  std::sort(family.begin(), family.end(),
            [](const FamilyTest* x, const FamilyTest* y) { return x->p < y->p; });
  const double m = static_cast<double>(family.size());
  for (size_t i = 0; i < family.size(); ++i) {
    if (family[i]->p > alpha / (m - static_cast<double>(i))) break;
    family[i]->holm_rejects = true;
  }
}

std::optional<Slope> bootstrap_slope(const SeedsByBatch& raw, uint64_t seed) {
  const SeedsByBatch data = budget_usable(raw);
  if (data.size() < 2) return std::nullopt;
  Slope out;
  out.per_doubling = budget_slope_of_means(data);
  out.batches = data.size();
  out.min_seeds = budget_fewest_seeds(data);
  std::mt19937_64 rng(seed);
  std::vector<double> draws;
  for (int r = 0; r < kBudgetResamples; ++r)
    draws.push_back(budget_slope_of_means(budget_resample(data, rng)));
  budget_percentile_bounds(std::move(draws), out);
  return out;
}

std::optional<Slope> bootstrap_slope_difference(const SeedsByBatch& raw_a,
                                                const SeedsByBatch& raw_b, uint64_t seed) {
  SeedsByBatch a, b;
  for (const auto& [batch, values] : budget_usable(raw_a)) {
    const auto other = raw_b.find(batch);
    if (other == raw_b.end() || other->second.empty()) continue;
    a[batch] = values;
    b[batch] = other->second;
  }
  if (a.size() < 2) return std::nullopt;
  Slope out;
  out.per_doubling = budget_slope_of_means(a) - budget_slope_of_means(b);
  out.batches = a.size();
  out.min_seeds = std::min(budget_fewest_seeds(a), budget_fewest_seeds(b));
  std::mt19937_64 rng(seed);
  std::vector<double> draws;
  for (int r = 0; r < kBudgetResamples; ++r) {
    draws.push_back(budget_slope_of_means(budget_resample(a, rng)) -
                    budget_slope_of_means(budget_resample(b, rng)));
  }
  budget_percentile_bounds(std::move(draws), out);
  return out;
}

}  // namespace batchlab::analysis
