#include "results/bootstrap_coverage.h"

#include <fmt/format.h>

#include <cmath>
#include <random>
#include <stdexcept>

#include "results/seed_bootstrap.h"
#include "results/seed_range.h"

namespace batchlab::results {

namespace {

bool interval_holds(const Interval& interval, double value) {
  return interval.low <= value && value <= interval.high;
}

// One simulated study: every seed at every batch, steps = S(B) x exp(N(0, noise_sd)).
std::vector<SeedSteps> simulate_study(const CoverageDesign& d, const std::vector<double>& batches,
                                      std::mt19937_64& generator) {
  std::normal_distribution<double> log_noise(0.0, d.noise_sd);
  std::vector<SeedSteps> cells;
  for (double b : batches) {
    const double steps = d.s_min * (1.0 + d.b_crit / b);
    for (int64_t seed = 0; seed < d.seeds; ++seed) {
      cells.push_back({b, seed, steps * std::exp(log_noise(generator))});
    }
  }
  return cells;
}

std::string coverage_percent(int part, int whole) {
  return whole == 0 ? "-" : fmt::format("{:.1f}%", 100.0 * part / whole);
}

}  // namespace

std::vector<double> coverage_batches(const CoverageDesign& design) {
  if (design.batches < 2) throw std::invalid_argument("coverage_batches: need 2 batch sizes");
  const double first = design.b_crit / std::pow(2.0, (design.batches - 1) / 2);
  std::vector<double> out;
  for (int i = 0; i < design.batches; ++i) out.push_back(first * std::pow(2.0, i));
  return out;
}

Coverage simulate_coverage(const CoverageDesign& design) {
  const std::vector<double> batches = coverage_batches(design);
  std::mt19937_64 generator(design.generator_seed);
  Coverage c;
  for (int r = 0; r < design.replications; ++r) {
    const auto cells = simulate_study(design, batches, generator);
    ++c.replications;
    // A bootstrap seed per replication from the study's generator: replications draw differently.
    if (const auto boot = bootstrap_seed_fit(cells, design.resamples, generator())) {
      ++c.stated;
      c.s_min_in += interval_holds(boot->s_min, design.s_min);
      c.b_crit_in += interval_holds(boot->b_crit, design.b_crit);
      c.b_crit_unbounded += std::isinf(boot->b_crit.high);
    }
    if (const auto range = per_seed_range(cells)) {
      ++c.ranged;
      c.range_s_min_in += interval_holds(range->s_min, design.s_min);
      c.range_b_crit_in += interval_holds(range->b_crit, design.b_crit);
    }
  }
  return c;
}

std::string coverage_header() {
  return "| seeds | batches | noise sd | replications | 95% holds S_min | 95% holds B_crit | "
         "B_crit upper unbounded | seed range holds S_min | seed range holds B_crit |\n"
         "|---|---|---|---|---|---|---|---|---|\n";
}

std::string coverage_row(const CoverageDesign& d, const Coverage& c) {
  const auto batches = coverage_batches(d);
  return fmt::format(
      "| {} | {} ({:.0f}-{:.0f}) | {:g} | {} | {} | {} | {} | {} | {} |\n", d.seeds, d.batches,
      batches.front(), batches.back(), d.noise_sd, c.replications,
      coverage_percent(c.s_min_in, c.stated), coverage_percent(c.b_crit_in, c.stated),
      coverage_percent(c.b_crit_unbounded, c.stated), coverage_percent(c.range_s_min_in, c.ranged),
      coverage_percent(c.range_b_crit_in, c.ranged));
}

}  // namespace batchlab::results
