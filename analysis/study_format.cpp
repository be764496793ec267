// Renderings of a StudyReport (analysis/study_report.h): the cell and fit tables for
// table/csv/markdown, and the JSON document the study figures (analysis/plots) draw from, so the
// fit has one implementation.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "analysis/critical_batch_format.h"
#include "analysis/study_report.h"
#include "analysis/table_builder.h"

namespace batchlab::analysis {

namespace {

using nlohmann::json;

template <typename T>
json optional_json(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

bool any_varying(const StudyReport& report) {
  for (const auto& c : report.cells) {
    if (!c.varying.empty()) return true;
  }
  return false;
}

std::string cell_note(const StudyCellSummary& c) {
  if (c.cell.status == "censored") {
    return fmt::format("not reached within the cap of {} steps", c.cell.cap_steps);
  }
  if (c.cell.status == "searching") return "still searching";
  if (!c.pruned_neighbours.empty()) {
    return fmt::format("best LR interior only by pruning (LR point {} pruned)",
                       fmt::join(c.pruned_neighbours, " and "));
  }
  return "";
}

std::string header(const StudyReport& report) {
  const std::string constants =
      report.constants.empty() ? ""
                               : fmt::format("; constant: {}", fmt::join(report.constants, ", "));
  return fmt::format(
      "Scaling study: {} cells, {} trials; target {}{}.\nsteps/samples = to the target (crossing "
      "interpolated in log-step) at the cell's best LR; basin = LR points within {:g}x of the "
      "best steps; seed_range = steps over the seeds of the same setting and batch.\n",
      report.cells.size(), report.cost.trials, fmt::join(report.targets, ", "), constants,
      kBasinFactor);
}

std::string fit_header() {
  return fmt::format(
      "Fit per series: S(B) = S_min + E_min/B, weighted least squares of steps on 1/B with weights "
      "1/S^2, one point per batch size (the geometric mean over its seeds; a batch with a censored "
      "seed left out); seeds = seeds per batch size (of the fitted batches where there is a fit); "
      "_se = standard errors from the weighted fit's "
      "covariance scaled by its residual variance; B_crit = E_min/S_min, its error by propagation; "
      "_interval = \"95%\": the 2.5th-97.5th percentiles over {} bootstrap resamples, the seeds "
      "of every batch size drawn within it and the curve refitted, every resample counted (one "
      "without a critical batch as B_crit unbounded: \"inf\"); only when every batch ran {} or "
      "more seeds. With fewer, no 95% interval: \"seed range\" = min-max over the per-seed fits, "
      "and the _se columns give the fit's standard errors; \"one seed\": the _se alone. "
      "B_simple = the mean over the series' trials of each run's average noise scale.\n",
      results::kSeedResamples, results::kMinSeedsForInterval);
}

// "3", or "1-3" when the batch sizes ran with different numbers of seeds.
// The seeds per batch size: of the batches the fit uses where there is a fit (the count that
// decides whether its interval may be called 95%), else of every batch of the series.
std::string seeds_text(const SeriesFit& f) {
  std::map<double, std::set<int64_t>> fitted;
  for (const auto& c : f.fitted_cells) fitted[c.batch].insert(c.seed);
  std::vector<size_t> counts;
  if (f.fit && !fitted.empty()) {
    for (const auto& [batch, seeds] : fitted) counts.push_back(seeds.size());
  } else {
    for (const auto& b : f.batch_seeds) counts.push_back(static_cast<size_t>(b.seeds));
  }
  if (counts.empty()) return "";
  const auto [low, high] = std::minmax_element(counts.begin(), counts.end());
  return *low == *high ? fmt::format("{}", *low) : fmt::format("{}-{}", *low, *high);
}

// "386-1149"; an unbounded upper end is "inf"; "-84.2 to 128.8" when the low end is negative,
// where a dash would read as a minus sign.
std::string range_text(const results::Interval& interval, int decimals) {
  const std::string high =
      std::isinf(interval.high) ? "inf" : fmt::format("{:.{}f}", interval.high, decimals);
  return fmt::format("{:.{}f}{}{}", interval.low, decimals, interval.low < 0 ? " to " : "-", high);
}

// One parameter's uncertainty, named as what it is: "95% low-high" (the bootstrap), "seed range
// low-high" (per-seed fits, too few seeds for an interval), "one seed"; empty without a fit.
std::string interval_text(const SeriesFit& f, results::Interval results::SeedBootstrap::*boot,
                          results::Interval results::SeedRange::*range, int decimals) {
  if (!f.fit) return "";
  if (f.bootstrap) return "95% " + range_text((*f.bootstrap).*boot, decimals);
  if (f.seed_range) return "seed range " + range_text((*f.seed_range).*range, decimals);
  return "one seed";
}

// [low, high], high null when unbounded (JSON has no infinity).
json interval_json(const results::Interval& interval) {
  return json::array(
      {interval.low, std::isinf(interval.high) ? json(nullptr) : json(interval.high)});
}

std::string cost_line(const StudyCost& cost) {
  if (!cost.ratio) return "cost: no samples trained yet\n";
  return fmt::format(
      "cost: the study trained {} samples. The same LR points as a grid: run to the cap, {} "
      "samples ({:.2f}x the study's); each stopped at its cell's winning step (hindsight, a lower "
      "bound for any grid of these points), {} samples ({:.2f}x)\n",
      cost.samples_trained, cost.samples_at_cap, *cost.ratio, cost.samples_at_winner,
      cost.ratio_at_winner.value_or(0.0));
}

json trial_json(const StudyTrialRecord& t) {
  return {{"run_id", t.run_id},
          {"base_lr", t.base_lr},
          {"lr_index", t.lr_index},
          {"outcome", t.outcome},
          {"last_step", optional_json(t.last_step)},
          {"steps_to_target", optional_json(t.steps_to_target)},
          {"samples_trained", optional_json(t.samples_trained)},
          {"cap_samples", optional_json(t.cap_samples)},
          {"reason", t.reason}};
}

json cell_json(const StudyCellSummary& c) {
  json trials = json::array();
  for (const auto& t : c.trials) trials.push_back(trial_json(t));
  return {{"cell_id", c.cell.cell_id},
          {"sweep_id", c.cell.sweep_id},
          {"series", c.series},
          {"optimizer", c.cell.optimizer},
          {"setting", c.setting},
          {"global_batch", c.cell.global_batch},
          {"seed", c.cell.seed},
          {"status", c.cell.status},
          {"target_metric", c.cell.target.metric},
          {"target_value", c.cell.target.value},
          {"best_lr", optional_json(c.cell.best_lr)},
          {"best_run_id", optional_json(c.cell.best_run_id)},
          {"steps_to_target", optional_json(c.cell.steps_to_target)},
          {"samples_to_target", optional_json(c.cell.samples_to_target)},
          {"cap_steps", c.cell.cap_steps},
          {"warmup_steps", c.cell.warmup_steps},
          {"lr_points", c.lr_points},
          {"basin_width", c.basin_width},
          {"seeds", c.seeds},
          {"seed_min", optional_json(c.seed_min)},
          {"seed_max", optional_json(c.seed_max)},
          {"pruned_neighbours", c.pruned_neighbours},
          {"trials", trials}};
}

json bootstrap_json(const results::SeedBootstrap& b) {
  json j = {{"seeds", b.seeds},
            {"min_batch_seeds", b.min_batch_seeds},
            {"resamples", b.resamples},
            {"without_b_crit", b.without_b_crit},
            {"unbounded", b.unbounded},
            {"b_crit", interval_json(b.b_crit)},
            {"s_min", interval_json(b.s_min)},
            {"e_min", interval_json(b.e_min)},
            {"band", json::array()}};
  for (const auto& p : b.band) {
    j["band"].push_back({p.batch, p.steps.low, p.steps.high});  // S(B) is finite
  }
  return j;
}

json fit_json(const SeriesFit& f) {
  json j = {{"series", f.series},
            {"optimizer", f.optimizer},
            {"searching", f.searching},
            {"b_simple", optional_json(f.b_simple)},
            {"b_simple_runs", f.b_simple_runs},
            {"batch_seeds", json::array()},
            {"fit", nullptr},
            {"bootstrap", nullptr},
            {"seed_range", nullptr},
            {"lack_of_fit", nullptr}};
  if (f.lack_of_fit) {
    const auto& t = *f.lack_of_fit;
    j["lack_of_fit"] = {{"f", t.f},
                        {"dof_lack", t.dof_lack},
                        {"dof_pure", t.dof_pure},
                        {"p", t.p},
                        {"worst_batch", t.worst_batch},
                        {"worst_measured", t.worst_measured},
                        {"worst_fitted", t.worst_fitted}};
  }
  for (const auto& b : f.batch_seeds) {
    j["batch_seeds"].push_back({{"batch", b.batch},
                                {"seeds", b.seeds},
                                {"reached", b.reached},
                                {"searching", b.searching}});
  }
  if (f.seed_range) {
    j["seed_range"] = {{"fits", f.seed_range->fits},
                       {"b_crit", interval_json(f.seed_range->b_crit)},
                       {"s_min", interval_json(f.seed_range->s_min)},
                       {"e_min", interval_json(f.seed_range->e_min)}};
  }
  if (f.bootstrap) j["bootstrap"] = bootstrap_json(*f.bootstrap);
  j["definitions"] = critical_batch_json(f);
  if (f.fit) {
    j["fit"] = {{"points", f.fit->points},
                {"batches", f.fit->batches},
                {"s_min", f.fit->s_min},
                {"e_min", f.fit->e_min},
                {"b_crit", optional_json(f.fit->b_crit)},
                {"s_min_se", optional_json(f.fit->s_min_se)},
                {"e_min_se", optional_json(f.fit->e_min_se)},
                {"b_crit_se", optional_json(f.fit->b_crit_se)},
                {"cov_s_e", f.fit->cov_s_e},
                {"censored", f.fit->excluded}};
  }
  return j;
}

json ladder_json(const StudyLadder& l) {
  return {{"series", l.series},
          {"sweep_id", l.sweep_id},
          {"batches", l.batches},
          {"stop", l.stop.empty() ? json(nullptr) : json(l.stop)},
          {"why", l.why},
          {"gains", l.gains},
          {"rule",
           {{"ceiling", l.rule.ceiling},
            {"min_gain", l.rule.min_gain},
            {"flat_doublings", l.rule.flat_doublings},
            {"budget_stop", l.rule.budget_stop},
            {"censored_rungs", l.rule.censored_rungs}}}};
}

json settings_json(const SeriesSettings& s) {
  json values = json::array();
  for (const auto& v : s.settings) values.push_back({{"key", v.key}, {"value", v.value}});
  return {{"series", s.series}, {"runs", s.runs}, {"configs", s.configs}, {"values", values}};
}

std::string study_json(const StudyReport& report) {
  json j = {{"kind", "study"},
            {"targets", report.targets},
            {"constants", report.constants},
            {"basin_factor", kBasinFactor}};
  j["cells"] = json::array();
  for (const auto& c : report.cells) j["cells"].push_back(cell_json(c));
  j["fits"] = json::array();
  for (const auto& f : report.fits) j["fits"].push_back(fit_json(f));
  j["ladders"] = json::array();
  for (const auto& l : report.ladders) j["ladders"].push_back(ladder_json(l));
  j["settings"] = json::array();
  for (const auto& s : report.settings) j["settings"].push_back(settings_json(s));
  j["cost"] = {{"trials", report.cost.trials},
               {"samples_trained", report.cost.samples_trained},
               {"samples_at_cap", report.cost.samples_at_cap},
               {"ratio", optional_json(report.cost.ratio)},
               {"samples_at_winner", report.cost.samples_at_winner},
               {"ratio_at_winner", optional_json(report.cost.ratio_at_winner)}};
  j["run_equivalents"] = json::array();
  for (const auto& r : report.run_equivalents) {
    j["run_equivalents"].push_back({{"series", r.series},
                                    {"batch", r.batch},
                                    {"seeds", r.seeds},
                                    {"trials_first_seed", r.first_trials},
                                    {"trials_all_seeds", r.all_trials},
                                    {"samples_first_seed", r.first_samples},
                                    {"samples_all_seeds", r.all_samples},
                                    {"unit_samples", optional_json(r.unit)},
                                    {"unit_is_cap", r.unit_is_cap},
                                    {"runs_first_seed", optional_json(r.first)},
                                    {"runs_all_seeds", optional_json(r.all)}});
  }
  j["target_ladder"] = target_ladder_json(report.target_ladder);
  j["warnings"] = report.warnings;
  return j.dump(2) + "\n";
}

}  // namespace

results::QueryResult study_cell_table(const StudyReport& report) {
  TableBuilder b;
  const bool settings = any_varying(report);
  for (const auto& c : report.cells) {
    b.text("optimizer", c.cell.optimizer);
    if (settings) b.text("setting", c.varying);
    b.integer("batch", c.cell.global_batch);
    b.integer("seed", c.cell.seed);
    b.text("status", c.cell.status);
    b.number("best_lr", c.cell.best_lr, "{:.4g}");
    b.number("steps", c.cell.steps_to_target, "{:.1f}");
    b.number("samples", c.cell.samples_to_target, "{:.0f}");
    b.integer("cap_steps", c.cell.cap_steps);
    b.integer("lr_points", c.lr_points);
    b.integer("basin", c.basin_width);
    b.integer("seeds", c.seeds);
    b.text("seed_range", c.seed_min ? fmt::format("{:.1f}-{:.1f}", *c.seed_min, *c.seed_max) : "");
    b.text("note", cell_note(c));
    b.end_row();
  }
  return b.table;
}

results::QueryResult study_fit_table(const StudyReport& report) {
  TableBuilder b;
  for (const auto& f : report.fits) {
    const results::ScalingFit* fit = f.fit ? &*f.fit : nullptr;
    auto value = [&](double results::ScalingFit::*field) {
      return fit ? std::optional<double>(fit->*field) : std::nullopt;
    };
    auto maybe = [&](std::optional<double> results::ScalingFit::*field) {
      return fit ? fit->*field : std::nullopt;
    };
    using results::SeedBootstrap;
    using results::SeedRange;
    b.text("series", f.series);
    b.integer("points", fit ? fit->points : 0);
    b.text("seeds", seeds_text(f));
    b.number("S_min", value(&results::ScalingFit::s_min), "{:.1f}");
    b.number("S_min_se", maybe(&results::ScalingFit::s_min_se), "{:.1f}");
    b.text("S_min_interval", interval_text(f, &SeedBootstrap::s_min, &SeedRange::s_min, 1));
    b.number("E_min", value(&results::ScalingFit::e_min), "{:.0f}");
    b.number("E_min_se", maybe(&results::ScalingFit::e_min_se), "{:.0f}");
    b.text("E_min_interval", interval_text(f, &SeedBootstrap::e_min, &SeedRange::e_min, 0));
    b.number("B_crit", maybe(&results::ScalingFit::b_crit), "{:.0f}");
    b.number("B_crit_se", maybe(&results::ScalingFit::b_crit_se), "{:.0f}");
    b.text("B_crit_interval", interval_text(f, &SeedBootstrap::b_crit, &SeedRange::b_crit, 0));
    b.number("B_simple", f.b_simple, "{:.0f}");
    b.integer("B_simple_runs", f.b_simple_runs);
    const auto b_crit = maybe(&results::ScalingFit::b_crit);
    b.number("B_crit/B_simple",
             b_crit && f.b_simple && *f.b_simple > 0 ? std::optional(*b_crit / *f.b_simple)
                                                     : std::nullopt,
             "{:.2f}");
    b.text("censored", fit ? fmt::format("{}", fmt::join(fit->excluded, "; ")) : "");
    b.end_row();
  }
  return b.table;
}

std::string format_study_report(const StudyReport& report, results::QueryFormat format) {
  using results::QueryFormat;
  if (format == QueryFormat::kJson) return study_json(report);
  const auto cells = study_cell_table(report);
  const auto fits = study_fit_table(report);
  if (format == QueryFormat::kCsv) {
    const auto settings = series_settings_table(report.settings);
    return results::format_csv(cells) + "\n" + results::format_csv(fits) +
           (settings.rows.empty() ? "" : "\n" + results::format_csv(settings));
  }
  const std::string gap = format == QueryFormat::kMarkdown ? "\n" : "";
  std::string out = header(report) + gap + results::format_result(cells, format, kAbsentCell) +
                    "\n" + fit_header() + gap + results::format_result(fits, format, kAbsentCell) +
                    "\n" + critical_batch_section(report.fits, format, gap) +
                    series_settings_section(report.settings, format, gap);
  for (const auto& l : report.ladders) out += ladder_line(l) + "\n" + gap;
  out += target_ladder_section(report.target_ladder, format, gap);
  out += cost_line(report.cost);
  if (!report.run_equivalents.empty()) {
    out +=
        gap +
        "Cost in full-run equivalents per series and batch: the samples trained there over the "
        "samples of one run of the first seed's winning trial (a run to the cap where it is "
        "censored); runs_first_seed = its search alone, runs_all_seeds = with the later seeds. "
        "(Shallue et al. 2019 ran about 100 trials per batch size; AlgoPerf allows 5 per "
        "workload.)\n" +
        gap +
        results::format_result(run_equivalents_table(report.run_equivalents), format, kAbsentCell);
  }
  for (const auto& w : report.warnings) out += fmt::format("{}warning: {}\n", gap, w);
  return out;
}

}  // namespace batchlab::analysis
