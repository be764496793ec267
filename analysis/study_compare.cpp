#include "analysis/study_compare.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "analysis/compare_family.h"
#include "analysis/report.h"
#include "analysis/study_report.h"
#include "analysis/table_builder.h"
#include "core/errors.h"
#include "results/pooled_ratio.h"
#include "results/seed_range.h"
#include "results/student_t.h"

namespace batchlab::analysis {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// One series' cells at one batch size: each seed's log steps (a seed with cells in two sweeps
// averages them, as the fit does) and the seeds that have not reached.
struct SideCells {
  std::map<int64_t, std::vector<double>> reached_logs, censored_log_caps;
  std::set<int64_t> seeds, censored, searching;
};

using SeriesBatches = std::map<int64_t, SideCells>;

SeriesBatches batches_of(const StudyReport& report, const std::string& series) {
  SeriesBatches out;
  for (const auto& c : report.cells) {
    if (c.series != series) continue;
    auto& side = out[c.cell.global_batch];
    side.seeds.insert(c.cell.seed);
    if (c.cell.status == "reached" && c.cell.steps_to_target && *c.cell.steps_to_target > 0) {
      side.reached_logs[c.cell.seed].push_back(std::log(*c.cell.steps_to_target));
    } else if (c.cell.status == "censored") {
      side.censored.insert(c.cell.seed);
      const double cap = static_cast<double>(std::max<int64_t>(c.cell.cap_steps, 1));
      side.censored_log_caps[c.cell.seed].push_back(std::log(cap));
    } else {
      side.searching.insert(c.cell.seed);
    }
  }
  return out;
}

// The mean of a side's log steps (Stat: the run report's mean and sample deviation).
double mean(const std::vector<double>& v) { return Stat::of(v).mean; }

// Per seed that reached with every cell: its mean log steps.
std::vector<double> seed_logs(const SideCells& side) {
  std::vector<double> out;
  for (const auto& [seed, logs] : side.reached_logs) {
    if (side.censored.count(seed) || side.searching.count(seed)) continue;
    out.push_back(mean(logs));
  }
  return out;
}

// True when every seed of the side is censored in every cell it has.
bool all_censored(const SideCells& side) {
  return !side.censored.empty() && side.searching.empty() && side.reached_logs.empty();
}

// Per seed of an all-censored side: its mean log cap, the least its log steps can be.
std::vector<double> seed_log_caps(const SideCells& side) {
  std::vector<double> out;
  for (const auto& [seed, logs] : side.censored_log_caps) out.push_back(mean(logs));
  return out;
}

Verdict verdict_of(const results::Interval& interval) {
  if (interval.low > 1.0) return Verdict::kAHigher;
  if (interval.high < 1.0) return Verdict::kALower;
  return Verdict::kNone;
}

SideAtBatch side_summary(const SideCells* side) {
  SideAtBatch out;
  if (!side) return out;
  const auto logs = seed_logs(*side);
  out.seeds = static_cast<int>(side->seeds.size());
  out.reached = static_cast<int>(logs.size());
  if (out.reached > 0 && out.reached == out.seeds) out.steps = std::exp(mean(logs));
  if (all_censored(*side)) out.cap = std::exp(mean(seed_log_caps(*side)));
  return out;
}

// Why a side has no steps at a batch, or "" when every seed reached.
std::string missing_steps(const std::string& name, const SideCells* side) {
  if (!side) return fmt::format("{}: not measured", name);
  const size_t n = side->seeds.size();
  if (!side->censored.empty()) {
    return fmt::format("{}: {} of {} seeds censored", name, side->censored.size(), n);
  }
  if (!side->searching.empty()) {
    return fmt::format("{}: {} of {} seeds still searching", name, side->searching.size(), n);
  }
  return "";
}

// Twice the upper tail of Student's t beyond |d| / se: the two-sided p-value a central interval
// d +- t_0.975 se inverts (p < 0.05 exactly when it excludes 0); 1 or 0 without a spread.
double two_sided_p(double d, double se, double dof) {
  if (!(se > 0.0)) return d == 0.0 ? 1.0 : 0.0;
  return std::min(1.0, 2.0 * (1.0 - results::student_t_cdf(std::abs(d) / se, dof)));
}

// Welch's 95% interval on the difference of mean log steps, as a ratio, and its test (header).
void welch_test(const std::vector<double>& a, const std::vector<double>& b, RatioEstimate& out) {
  const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
  const double sa = Stat::of(a).stddev.value(), sb = Stat::of(b).stddev.value();
  const double va = sa * sa, vb = sb * sb;
  const double se = std::sqrt(va / na + vb / nb);
  const double dof = results::welch_dof(va, na, vb, nb);
  const double t = results::student_t_quantile(results::kIntervalHigh, dof);
  const double d = mean(a) - mean(b);
  out.interval = {std::exp(d - t * se), std::exp(d + t * se)};
  out.p = two_sided_p(d, se, dof);
}

// Every seed of one side censored, every seed of the other reached: the one-sided ratio (header),
// or nullopt for any other batch.
std::optional<RatioEstimate> censored_bound(const SideCells* a, const SideCells* b) {
  if (!a || !b || all_censored(*a) == all_censored(*b)) return std::nullopt;
  const bool a_censored = all_censored(*a);
  const SideCells& reached = a_censored ? *b : *a;
  if (!reached.censored.empty() || !reached.searching.empty()) return std::nullopt;
  const auto caps = seed_log_caps(a_censored ? *a : *b), logs = seed_logs(reached);
  const double d = a_censored ? mean(caps) - mean(logs) : mean(logs) - mean(caps);  // log A/B
  RatioEstimate out;
  out.ratio = std::exp(d);
  out.bound = a_censored ? RatioBound::kAtLeast : RatioBound::kAtMost;
  const std::string censored_text =
      fmt::format("{}: {} of {} seeds censored, A/B {} {:.2f}x", a_censored ? "A" : "B",
                  caps.size(), caps.size(), a_censored ? "at least" : "at most", *out.ratio);
  const auto fewest = static_cast<size_t>(results::kMinSeedsForInterval);
  if (caps.size() < fewest || logs.size() < fewest) {
    out.why = fmt::format("{}; fewer than {} seeds a side: no verdict", censored_text, fewest);
    return out;
  }
  const double n_c = static_cast<double>(caps.size()), n_r = static_cast<double>(logs.size());
  const double se = Stat::of(logs).stddev.value() * std::sqrt(1.0 / n_c + 1.0 / n_r);
  const double t = results::student_t_quantile(results::kIntervalHigh, n_r - 1.0);
  out.kind = RatioKind::kConfidence95;
  out.interval = a_censored ? results::Interval{std::exp(d - t * se), kInf}
                            : results::Interval{0.0, std::exp(d + t * se)};
  // The one-sided test of the bound's side, doubled so that p < 0.05 when the 97.5% end clears 1.
  const double toward = a_censored ? d : -d;
  out.p = toward > 0.0 ? two_sided_p(toward, se, n_r - 1.0) : 1.0;
  out.verdict = verdict_of(out.interval);
  out.why =
      out.verdict == Verdict::kNone ? censored_text + "; 95% bound includes 1" : censored_text;
  return out;
}

RatioEstimate steps_ratio(const SideCells* a, const SideCells* b) {
  if (auto bound = censored_bound(a, b)) return *bound;
  RatioEstimate out;
  std::vector<std::string> missing;
  for (auto m : {missing_steps("A", a), missing_steps("B", b)}) {
    if (!m.empty()) missing.push_back(m);
  }
  if (!missing.empty()) {
    out.why = fmt::format("{}", fmt::join(missing, "; "));
    return out;
  }
  const auto la = seed_logs(*a), lb = seed_logs(*b);
  out.ratio = std::exp(mean(la) - mean(lb));
  const size_t fewest = std::min(la.size(), lb.size());
  if (fewest >= static_cast<size_t>(results::kMinSeedsForInterval)) {
    out.kind = RatioKind::kConfidence95;
    welch_test(la, lb, out);
    out.verdict = verdict_of(out.interval);
    if (out.verdict == Verdict::kNone) out.why = "95% interval includes 1";
    return out;
  }
  if (la.size() * lb.size() == 1) {
    out.kind = RatioKind::kOneSeed;
    out.why = "one seed a side: no interval";
    return out;
  }
  out.kind = RatioKind::kSeedRange;
  const auto [a_low, a_high] = std::minmax_element(la.begin(), la.end());
  const auto [b_low, b_high] = std::minmax_element(lb.begin(), lb.end());
  out.interval = {std::exp(*a_low - *b_high), std::exp(*a_high - *b_low)};
  out.why = fmt::format("fewer than {} seeds a side: seed range, no verdict",
                        results::kMinSeedsForInterval);
  return out;
}

// a / b for values in [0, inf]; nullopt when it has no value (0/0, inf/inf).
std::optional<double> ratio_value(double a, double b) {
  const bool a_zero = !(a > 0.0), b_zero = !(b > 0.0);
  if ((a_zero && b_zero) || (std::isinf(a) && std::isinf(b))) return std::nullopt;
  if (b_zero || std::isinf(a)) return kInf;
  if (a_zero || std::isinf(b)) return 0.0;
  return a / b;
}

// A fit parameter as the ratio ranks it: S_min <= 0 (no floor) as 0; B_crit as the bootstrap
// ranks it (0 without a gain from batch, +infinity without a floor).
double s_min_value(const results::ScalingFit& f) { return std::max(f.s_min, 0.0); }
double b_crit_value(const results::ScalingFit& f) { return results::ranked_b_crit(f); }

using FitValue = double (*)(const results::ScalingFit&);

// Paired resamples; one without a ratio counts as 0 at the low end and +infinity at the high end.
// The p-value is twice the share of resamples on the far side of 1 (at most 1), counted the same
// way, so p < 0.05 when the interval excludes 1.
void resampled_ratio(const std::vector<results::ScalingFit>& a,
                     const std::vector<results::ScalingFit>& b, FitValue value,
                     RatioEstimate& out) {
  std::vector<double> lows, highs;
  double at_most_one = 0.0, at_least_one = 0.0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const auto r = ratio_value(value(a[i]), value(b[i]));
    lows.push_back(r ? *r : 0.0);
    highs.push_back(r ? *r : kInf);
    at_most_one += lows.back() <= 1.0 ? 1.0 : 0.0;
    at_least_one += highs.back() >= 1.0 ? 1.0 : 0.0;
  }
  out.interval = {results::percentile_interval(lows).low, results::percentile_interval(highs).high};
  const double n = static_cast<double>(lows.size());
  out.p = std::min(1.0, 2.0 * std::min(at_most_one, at_least_one) / n);
}

RatioEstimate fit_ratio(const SeriesFit& a, const SeriesFit& b, FitValue value,
                        results::Interval results::SeedRange::*range) {
  RatioEstimate out;
  if (!a.fit || !b.fit) {
    out.why = fmt::format("no fit for {}: fewer than 2 batch sizes reached", !a.fit ? "A" : "B");
    return out;
  }
  out.ratio = ratio_value(value(*a.fit), value(*b.fit));
  // Independent generators: the same one would draw the two series' seeds in lockstep.
  const auto ra = results::resample_seed_fits(a.fitted_cells, results::kSeedResamples,
                                              results::kSeedBootstrapSeed);
  const auto rb = results::resample_seed_fits(b.fitted_cells, results::kSeedResamples,
                                              results::kSeedBootstrapSeed + 1);
  if (ra && rb) {
    out.kind = RatioKind::kConfidence95;
    resampled_ratio(*ra, *rb, value, out);
    out.verdict = verdict_of(out.interval);
    if (out.verdict == Verdict::kNone) out.why = "95% interval includes 1";
    return out;
  }
  const auto sa = results::per_seed_range(a.fitted_cells);
  const auto sb = results::per_seed_range(b.fitted_cells);
  if (sa && sb) {
    const results::Interval ia = (*sa).*range, ib = (*sb).*range;
    // S_min ranges can reach below 0: rank them as the point does.
    const double a_low = std::max(ia.low, 0.0), b_low = std::max(ib.low, 0.0);
    out.kind = RatioKind::kSeedRange;
    out.interval = {ratio_value(a_low, ib.high).value_or(0.0),
                    ratio_value(ia.high, b_low).value_or(kInf)};
    out.why = fmt::format("fewer than {} seeds at a fitted batch: seed range, no verdict",
                          results::kMinSeedsForInterval);
    return out;
  }
  out.kind = RatioKind::kOneSeed;
  out.why = "one seed: no interval";
  return out;
}

// The batches where both sides reached in every seed, pooled (results/pooled_ratio.h).
RatioEstimate pooled_estimate(const SeriesBatches& a, const SeriesBatches& b,
                              std::vector<int64_t>& used) {
  std::vector<results::BatchLogSteps> batches;
  for (const auto& [batch, side_a] : a) {
    const auto it = b.find(batch);
    if (it == b.end()) continue;
    const auto la = seed_logs(side_a), lb = seed_logs(it->second);
    if (la.empty() || lb.empty() || la.size() != side_a.seeds.size() ||
        lb.size() != it->second.seeds.size()) {
      continue;
    }
    batches.push_back({static_cast<double>(batch), la, lb});
    used.push_back(batch);
  }
  RatioEstimate out;
  const auto pooled =
      results::pooled_ratio(batches, results::kPooledResamples, results::kSeedBootstrapSeed + 2);
  if (!pooled) {
    out.why = "no batch where both sides reached in every seed";
    return out;
  }
  out.ratio = pooled->ratio;
  if (!pooled->interval) {
    // "one seed" only where a side has one; with 2 the note says why there is no interval.
    size_t fewest = std::numeric_limits<size_t>::max();
    for (const auto& both : batches) fewest = std::min({fewest, both.a.size(), both.b.size()});
    out.kind = fewest <= 1 ? RatioKind::kOneSeed : RatioKind::kNone;
    out.why = fmt::format("fewer than {} seeds a side at a pooled batch: no interval",
                          results::kMinSeedsForInterval);
    return out;
  }
  out.kind = RatioKind::kConfidence95;
  out.interval = *pooled->interval;
  out.p = pooled->p;
  out.verdict = verdict_of(out.interval);
  if (out.verdict == Verdict::kNone) out.why = "95% interval includes 1";
  return out;
}

const SeriesFit& find_series(const StudyReport& report, const std::string& name,
                             const std::string& db_path) {
  std::vector<std::string> names;
  for (const auto& f : report.fits) {
    if (f.series == name) return f;
    names.push_back("'" + f.series + "'");
  }
  throw InputError(fmt::format(
      "{}: no series '{}' in the study; its series are {} (as `batchlab report` names them)",
      db_path, name, fmt::join(names, ", ")));
}

const SeriesSettings* settings_of_series(const StudyReport& report, const std::string& name) {
  for (const auto& s : report.settings) {
    if (s.series == name) return &s;
  }
  return nullptr;
}

// "nesterov's curve misses its batches' means beyond their seeds' spread (lack-of-fit p = 0.0026)",
// one clause per side that fails the test; empty when both fit or cannot be tested.
std::string misfit_caveat(const std::vector<const SeriesFit*>& sides) {
  std::vector<std::string> parts;
  for (const auto* f : sides) {
    if (f->lack_of_fit && f->lack_of_fit->p < results::kLackOfFitLevel) {
      parts.push_back(
          fmt::format("{}'s curve misses its batches' means beyond their seeds' spread "
                      "(lack-of-fit p = {:.2g})",
                      f->series, f->lack_of_fit->p));
    }
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

}  // namespace

StudyComparison compare_study_series(const std::string& db_path, const std::string& a,
                                     const std::string& b,
                                     const std::optional<std::string>& sweep_id) {
  if (!has_study(db_path, sweep_id)) {
    throw InputError(fmt::format(
        "{}: no scaling study{} (no study_cells rows); compare reads a database written by `sweep "
        "run` on a spec with a [study] section",
        db_path, sweep_id ? " of sweep " + *sweep_id : ""));
  }
  StudyReportOptions options;
  options.sweep_id = sweep_id;
  options.target_ladder = false;
  return compare_report_series(build_study_report(db_path, options), a, b, db_path);
}

StudyComparison compare_report_series(const StudyReport& report, const std::string& a,
                                      const std::string& b, const std::string& source) {
  const SeriesFit& fa = find_series(report, a, source);
  const SeriesFit& fb = find_series(report, b, source);
  if (a == b) throw InputError(fmt::format("compare: A and B are the same series '{}'", a));
  StudyComparison out;
  out.a = a;
  out.b = b;
  out.targets = fmt::format("{}", fmt::join(report.targets, ", "));
  const SeriesBatches ba = batches_of(report, a), bb = batches_of(report, b);
  std::set<int64_t> batches;
  for (const auto& [batch, side] : ba) batches.insert(batch);
  for (const auto& [batch, side] : bb) batches.insert(batch);
  for (int64_t batch : batches) {
    const auto ia = ba.find(batch);
    const auto ib = bb.find(batch);
    const SideCells* sa = ia == ba.end() ? nullptr : &ia->second;
    const SideCells* sb = ib == bb.end() ? nullptr : &ib->second;
    out.batches.push_back({batch, side_summary(sa), side_summary(sb), steps_ratio(sa, sb)});
  }
  const SeriesSettings *set_a = settings_of_series(report, a),
                       *set_b = settings_of_series(report, b);
  out.settings_known = set_a && set_b && !set_a->settings.empty() && !set_b->settings.empty();
  if (out.settings_known) out.settings = series_differences(*set_a, *set_b);
  out.fit_caveat = misfit_caveat({&fa, &fb});
  out.s_min = fit_ratio(fa, fb, s_min_value, &results::SeedRange::s_min);
  out.b_crit = fit_ratio(fa, fb, b_crit_value, &results::SeedRange::b_crit);
  out.pooled = pooled_estimate(ba, bb, out.pooled_batches);
  control_family_wise(out);
  out.verdicts = comparison_verdicts(out);
  return out;
}

}  // namespace batchlab::analysis
