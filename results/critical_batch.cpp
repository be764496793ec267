#include "results/critical_batch.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <utility>

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

namespace {

int count_unbounded(const std::vector<double>& values) {
  return static_cast<int>(
      std::count_if(values.begin(), values.end(), [](double v) { return std::isinf(v); }));
}

// The 95% interval over every value, the unbounded ones (+infinity) counted and ranked last.
Spread interval_spread(std::vector<double> values) {
  Spread out;
  out.kind = Spread::Kind::kInterval;
  out.draws = static_cast<int>(values.size());
  out.unbounded = count_unbounded(values);
  out.range = percentile_interval(std::move(values));
  return out;
}

// The min-max over values (seeds or runs), the unbounded ones counted.
Spread range_spread(const std::vector<double>& values, Spread::Kind kind) {
  Spread out;
  out.kind = kind;
  out.draws = static_cast<int>(values.size());
  out.unbounded = count_unbounded(values);
  const auto [low, high] = std::minmax_element(values.begin(), values.end());
  out.range = {*low, *high};
  return out;
}

Spread none_because(std::string why) {
  Spread out;
  out.why = std::move(why);
  return out;
}

// Each seed's own 20% batches (header): from its own fit, and from its own crossing when it ran
// the reference batch and another.
struct SeedValues {
  size_t seeds = 0;  // distinct seeds among the cells
  std::vector<double> fitted, measured;
};

SeedValues per_seed_values(const std::vector<SeedSteps>& cells, double reference_batch) {
  std::map<int64_t, std::vector<SeedSteps>> by_seed;
  for (const auto& c : cells) by_seed[c.seed].push_back(c);
  SeedValues out;
  out.seeds = by_seed.size();
  for (const auto& [seed, own] : by_seed) {
    const auto points = seed_mean_points(own);
    // fit_scaling gives nullopt below two batch sizes: that seed has no fit of its own.
    if (const auto fit = fit_scaling(points)) {
      out.fitted.push_back(fit_excess_batch(*fit, reference_batch));
    }
    if (points.size() >= 2 && points.front().batch == reference_batch) {
      out.measured.push_back(measured_excess_batch(points).value_or(kUnbounded));
    }
  }
  return out;
}

// 95% over the seed resamples; false with too few seeds for them.
bool bootstrap_spreads(const std::vector<SeedSteps>& cells, CriticalBatches& out) {
  const auto draws = resample_seed_points(cells);
  if (!draws) return false;
  std::vector<double> fitted, measured;
  for (const auto& draw : *draws) {
    fitted.push_back(fit_excess_batch(fit_scaling(draw).value(), out.reference_batch));
    measured.push_back(measured_excess_batch(draw).value_or(kUnbounded));
  }
  out.fit_excess_spread = interval_spread(std::move(fitted));
  out.measured_excess_spread = interval_spread(std::move(measured));
  return true;
}

// Fewer seeds: the seed ranges where two seeds or more have a value, else the fit's standard
// error, else why there is nothing.
void seed_spreads(const ScalingFit& fit, const std::vector<SeedSteps>& cells,
                  CriticalBatches& out) {
  const SeedValues values = per_seed_values(cells, out.reference_batch);
  if (values.fitted.size() >= 2) {
    out.fit_excess_spread = range_spread(values.fitted, Spread::Kind::kSeedRange);
  } else if (fit.b_crit_se) {
    out.fit_excess_spread.kind = Spread::Kind::kStandardError;
    out.fit_excess_spread.standard_error = kLinearScalingExcess * *fit.b_crit_se;
  } else {
    out.fit_excess_spread = none_because(
        fmt::format("one seed with its own fit, through {} batches: no residual, no standard error",
                    fit.batches));
  }
  if (values.measured.size() >= 2) {
    out.measured_excess_spread = range_spread(values.measured, Spread::Kind::kSeedRange);
  } else if (values.seeds == 1) {
    out.measured_excess_spread = none_because("one seed, no second crossing to compare with");
  } else {
    out.measured_excess_spread =
        none_because(fmt::format("{} seed ran batch {:.0f} and a larger one: a seed range needs 2",
                                 values.measured.size(), out.reference_batch));
  }
}

}  // namespace

CriticalBatches critical_batches(const ScalingFit& fit, const std::vector<SeedSteps>& cells) {
  const auto points = seed_mean_points(cells);
  CriticalBatches out;
  if (points.empty()) return out;
  out.reference_batch = points.front().batch;
  out.largest_batch = points.back().batch;
  out.fit_excess = fit_excess_batch(fit, out.reference_batch);
  out.measured_excess = measured_excess_batch(points);
  if (!bootstrap_spreads(cells, out)) seed_spreads(fit, cells, out);
  return out;
}

Spread noise_scale_spread(const std::vector<double>& run_means, int resamples,
                          uint64_t generator_seed) {
  if (run_means.empty()) return none_because("not measured");
  if (run_means.size() == 1) return none_because("one run");
  if (run_means.size() < static_cast<size_t>(kMinSeedsForInterval)) {
    return range_spread(run_means, Spread::Kind::kRunRange);
  }
  std::mt19937_64 generator(generator_seed);
  const size_t n = run_means.size();
  std::vector<double> means;
  means.reserve(static_cast<size_t>(resamples));
  for (int r = 0; r < resamples; ++r) {
    double sum = 0.0;
    // The remainder, as results/seed_bootstrap.cpp draws: the same interval everywhere.
    for (size_t i = 0; i < n; ++i) sum += run_means[generator() % n];
    means.push_back(sum / static_cast<double>(n));
  }
  return interval_spread(std::move(means));
}

}  // namespace batchlab::results
