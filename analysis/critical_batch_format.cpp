#include "analysis/critical_batch_format.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "analysis/table_builder.h"

namespace batchlab::analysis {

namespace {

using nlohmann::json;

std::string batch_text(double v) { return std::isinf(v) ? "inf" : fmt::format("{:.0f}", v); }

std::string range_text(const results::Interval& i) {
  return fmt::format("{}-{}", batch_text(i.low), batch_text(i.high));
}

// B_simple's spread over runs, with the runs' own range beside a bootstrap interval.
std::string b_simple_text(const SeriesFit& f) {
  if (!f.b_simple) return "";
  std::string text = spread_text(f.b_simple_spread, "");
  if (f.b_simple_spread.kind == results::Spread::Kind::kInterval && f.b_simple_range) {
    text += fmt::format(" over {} runs (runs {})", f.b_simple_runs, range_text(*f.b_simple_range));
  }
  return text;
}

const char* kind_name(results::Spread::Kind kind) {
  using Kind = results::Spread::Kind;
  switch (kind) {
    case Kind::kInterval:
      return "95%";
    case Kind::kSeedRange:
      return "seed range";
    case Kind::kRunRange:
      return "run range";
    case Kind::kStandardError:
      return "se";
    case Kind::kNone:
      break;
  }
  return "none";
}

json bound_json(double v) { return std::isinf(v) ? json(nullptr) : json(v); }

// The 95% interval alone as [low, high] (high null when unbounded), null for any other spread.
json interval_json(const results::Spread& s) {
  if (s.kind != results::Spread::Kind::kInterval) return nullptr;
  return json::array({s.range.low, bound_json(s.range.high)});
}

json interval_json(const std::optional<results::Interval>& i) {
  if (!i) return nullptr;
  return json::array({i->low, bound_json(i->high)});
}

std::optional<results::Interval> b_crit_interval(const SeriesFit& f) {
  if (!f.bootstrap) return std::nullopt;
  return f.bootstrap->b_crit;
}

// E_min/S_min's uncertainty as the fit table names it: the 95% interval, else the seed range of
// per-seed fits, else the fit's standard error.
std::string b_crit_uncertainty(const SeriesFit& f) {
  if (f.bootstrap) return "95% " + range_text(f.bootstrap->b_crit);
  if (f.seed_range) {
    return fmt::format("seed range {}-{}", batch_text(f.seed_range->b_crit.low),
                       batch_text(f.seed_range->b_crit.high));
  }
  if (f.fit && f.fit->b_crit_se) return fmt::format("se {:.0f}", *f.fit->b_crit_se);
  if (f.fit && !f.fit->b_crit) return "none: no E_min/S_min";
  return "none: one seed, a fit through 2 batches (no standard error)";
}

// E_min/S_min, or what the curve says instead: no floor (unbounded) or no gain from batch.
std::string b_crit_text(const results::ScalingFit& fit) {
  if (fit.b_crit) return batch_text(*fit.b_crit);
  return fit.e_min > 0.0 ? "inf (S_min <= 0)" : "none: E_min <= 0 (no gain from batch)";
}

std::string measured_text(const results::CriticalBatches& d) {
  return d.measured_excess ? batch_text(*d.measured_excess)
                           : fmt::format("> {}", batch_text(d.largest_batch));
}

}  // namespace

std::string spread_text(const results::Spread& s, const std::string& unbounded_means) {
  using Kind = results::Spread::Kind;
  std::string text;
  switch (s.kind) {
    case Kind::kInterval:
      text = "95% " + range_text(s.range);
      break;
    case Kind::kSeedRange:
      text = fmt::format("seed range {} ({} seeds)", range_text(s.range), s.draws);
      break;
    case Kind::kRunRange:
      text = fmt::format("run range {} ({} runs)", range_text(s.range), s.draws);
      break;
    case Kind::kStandardError:
      return fmt::format("se {:.0f} (one seed)", s.standard_error);
    case Kind::kNone:
      return "none: " + s.why;
  }
  if (s.unbounded == 0) return text;
  const char* draws = s.kind == Kind::kInterval ? "resamples" : "seeds";
  return fmt::format("{}; {} of {} {} {}: unbounded", text, s.unbounded, s.draws, draws,
                     unbounded_means);
}

std::string measured_unbounded(const results::CriticalBatches& d) {
  return d.measured_excess_spread.kind == results::Spread::Kind::kSeedRange
             ? "not crossing by its own largest batch"
             : fmt::format("not crossing by batch {}", batch_text(d.largest_batch));
}

json spread_json(const results::Spread& s) {
  using Kind = results::Spread::Kind;
  const bool ranged =
      s.kind == Kind::kInterval || s.kind == Kind::kSeedRange || s.kind == Kind::kRunRange;
  return {{"kind", kind_name(s.kind)},
          {"low", ranged ? json(s.range.low) : json(nullptr)},
          {"high", ranged ? bound_json(s.range.high) : json(nullptr)},
          {"se", s.kind == Kind::kStandardError ? json(s.standard_error) : json(nullptr)},
          {"draws", s.draws},
          {"unbounded", s.unbounded},
          {"why", s.kind == Kind::kNone ? json(s.why) : json(nullptr)}};
}

results::QueryResult critical_batch_table(const std::vector<SeriesFit>& fits) {
  TableBuilder b;
  for (const auto& f : fits) {
    if (!f.fit || !f.definitions) continue;
    const auto& d = *f.definitions;
    b.text("series", f.series);
    b.text("E_min/S_min", b_crit_text(*f.fit));
    b.text("interval", b_crit_uncertainty(f));
    b.integer("reference_batch", static_cast<long long>(d.reference_batch));
    b.text("20%_fit", batch_text(d.fit_excess));
    b.text("20%_fit_interval", spread_text(d.fit_excess_spread, "with S_min <= 0"));
    b.text("20%_measured", measured_text(d));
    b.text("20%_measured_interval", spread_text(d.measured_excess_spread, measured_unbounded(d)));
    b.text("B_simple", f.b_simple ? batch_text(*f.b_simple) : "not measured");
    b.text("B_simple_interval", b_simple_text(f));
    b.end_row();
  }
  return b.table;
}

std::string critical_batch_section(const std::vector<SeriesFit>& fits, results::QueryFormat format,
                                   const std::string& gap) {
  const auto table = critical_batch_table(fits);
  if (table.rows.empty()) return "";
  return fmt::format(
             "The critical batch, every definition (results/critical_batch.h): E_min/S_min of the "
             "fit (McCandlish et al. 2018); the batch whose samples to the target exceed linear "
             "scaling from reference_batch (the smallest fitted batch) by {:g}% (Zhang et al. "
             "2024), from the fit (= 1.2 reference + 0.2 E_min/S_min) and from the measured steps "
             "(interpolated in log samples against log batch; \"> B\": not reached by the largest "
             "batch); B_simple = the run-averaged noise scale where runs measured it. Intervals, "
             "named "
             "as what they are: \"95%\" over {} seed resamples within each batch, only with {} "
             "seeds or more at every batch, every resample counted (one with S_min <= 0 or no "
             "crossing by the largest batch as unbounded, their count given); with fewer seeds a "
             "\"seed range\", min-max over each seed's own fit or crossing; \"se\" from the "
             "fit's standard error with one seed; B_simple's \"95%\" a bootstrap of the per-run "
             "averages (how much the mean depends on which runs it averaged), a \"run range\" "
             "with 2 runs.\n",
             100.0 * results::kLinearScalingExcess, results::kSeedResamples,
             results::kMinSeedsForInterval) +
         gap + results::format_result(table, format, kAbsentCell) + "\n";
}

json critical_batch_json(const SeriesFit& f) {
  if (!f.fit || !f.definitions) return nullptr;
  const auto& d = *f.definitions;
  return {{"b_crit", f.fit->b_crit ? json(*f.fit->b_crit) : json(nullptr)},
          {"b_crit_interval", interval_json(b_crit_interval(f))},
          {"excess", results::kLinearScalingExcess},
          {"reference_batch", d.reference_batch},
          {"largest_batch", d.largest_batch},
          {"fit_excess", std::isinf(d.fit_excess) ? json(nullptr) : json(d.fit_excess)},
          {"fit_excess_interval", interval_json(d.fit_excess_spread)},
          {"fit_excess_spread", spread_json(d.fit_excess_spread)},
          {"measured_excess", d.measured_excess ? json(*d.measured_excess) : json(nullptr)},
          {"measured_excess_interval", interval_json(d.measured_excess_spread)},
          {"measured_excess_spread", spread_json(d.measured_excess_spread)},
          {"b_simple", f.b_simple ? json(*f.b_simple) : json(nullptr)},
          {"b_simple_runs", f.b_simple_runs},
          {"b_simple_range", f.b_simple_range
                                 ? json::array({f.b_simple_range->low, f.b_simple_range->high})
                                 : json(nullptr)},
          {"b_simple_spread", spread_json(f.b_simple_spread)}};
}

}  // namespace batchlab::analysis
