#include "analysis/critical_batch_format.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "analysis/table_builder.h"

namespace batchlab::analysis {

namespace {

using nlohmann::json;

std::string batch_text(double v) { return std::isinf(v) ? "inf" : fmt::format("{:.0f}", v); }

// "95% 36-41", or why there is none.
std::string interval_text(const std::optional<results::Interval>& i) {
  if (!i) return fmt::format("none: fewer than {} seeds at a batch", results::kMinSeedsForInterval);
  return fmt::format("95% {}-{}", batch_text(i->low), batch_text(i->high));
}

json interval_json(const std::optional<results::Interval>& i) {
  if (!i) return nullptr;
  return json::array({i->low, std::isinf(i->high) ? json(nullptr) : json(i->high)});
}

std::optional<results::Interval> b_crit_interval(const SeriesFit& f) {
  if (!f.bootstrap) return std::nullopt;
  return f.bootstrap->b_crit;
}

// E_min/S_min's uncertainty as the fit table names it: the 95% interval, else the seed range of
// per-seed fits, else the fit's standard error.
std::string b_crit_uncertainty(const SeriesFit& f) {
  if (f.bootstrap) return interval_text(f.bootstrap->b_crit);
  if (f.seed_range) {
    return fmt::format("seed range {}-{}", batch_text(f.seed_range->b_crit.low),
                       batch_text(f.seed_range->b_crit.high));
  }
  if (f.fit && f.fit->b_crit_se) return fmt::format("se {:.0f}", *f.fit->b_crit_se);
  return "none";
}

std::string measured_text(const results::CriticalBatches& d) {
  return d.measured_excess ? batch_text(*d.measured_excess)
                           : fmt::format("> {}", batch_text(d.largest_batch));
}

}  // namespace

results::QueryResult critical_batch_table(const std::vector<SeriesFit>& fits) {
  TableBuilder b;
  for (const auto& f : fits) {
    if (!f.fit || !f.definitions) continue;
    const auto& d = *f.definitions;
    b.text("series", f.series);
    b.text("E_min/S_min", f.fit->b_crit ? batch_text(*f.fit->b_crit) : "none");
    b.text("interval", b_crit_uncertainty(f));
    b.integer("reference_batch", static_cast<long long>(d.reference_batch));
    b.text("20%_fit", batch_text(d.fit_excess));
    b.text("20%_fit_interval", interval_text(d.fit_excess_interval));
    b.text("20%_measured", measured_text(d));
    b.text("20%_measured_interval", interval_text(d.measured_excess_interval));
    b.text("B_simple", f.b_simple ? batch_text(*f.b_simple) : "not measured");
    b.text("B_simple_runs", f.b_simple_range ? fmt::format("{} runs, {}-{}", f.b_simple_runs,
                                                           batch_text(f.b_simple_range->low),
                                                           batch_text(f.b_simple_range->high))
                                             : "");
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
             "batch); B_simple = the run-averaged noise scale where runs measured it (range over "
             "runs). Intervals: 95% over {} seed resamples within each batch, every resample "
             "counted.\n",
             100.0 * results::kLinearScalingExcess, results::kSeedResamples) +
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
          {"fit_excess_interval", interval_json(d.fit_excess_interval)},
          {"measured_excess", d.measured_excess ? json(*d.measured_excess) : json(nullptr)},
          {"measured_excess_interval", interval_json(d.measured_excess_interval)},
          {"b_simple", f.b_simple ? json(*f.b_simple) : json(nullptr)},
          {"b_simple_runs", f.b_simple_runs},
          {"b_simple_range", f.b_simple_range
                                 ? json::array({f.b_simple_range->low, f.b_simple_range->high})
                                 : json(nullptr)}};
}

}  // namespace batchlab::analysis
