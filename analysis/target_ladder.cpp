#include "analysis/target_ladder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "analysis/critical_batch_format.h"
#include "analysis/run_records.h"
#include "analysis/study_report.h"
#include "analysis/table_builder.h"
#include "results/query.h"

namespace batchlab::analysis {

namespace {

// The cells at one rung: each cell's earliest crossing over its trials; a cell none of whose
// trials crossed keeps its status when it was censored or searching, else is censored here.
StudyRecords records_at(const StudyRecords& records, const TrialCurves& curves, double target,
                        bool lower_is_better) {
  StudyRecords out;
  out.cells = records.cells;
  std::map<std::string, std::optional<double>> best;
  for (const auto& t : records.trials) {
    const auto it = curves.find(t.run_id);
    if (it == curves.end()) continue;
    const auto step = crossing_step(it->second, target, lower_is_better);
    auto& b = best[t.cell_id];
    if (step && (!b || *step < *b)) b = step;
  }
  for (auto& c : out.cells) {
    c.target.value = target;
    const auto it = best.find(c.cell_id);
    if (it != best.end() && it->second) {
      c.status = "reached";
      c.steps_to_target = *it->second;
      c.samples_to_target = *it->second * static_cast<double>(c.global_batch);
    } else if (c.status == "reached") {
      c.status = "censored";
      c.steps_to_target.reset();
    }
  }
  return out;
}

TargetRungFit rung_fit(const SeriesFit& f) {
  TargetRungFit out;
  out.series = f.series;
  if (!f.fit) return out;
  out.batches = f.fit->batches;
  out.s_min = f.fit->s_min;
  out.b_crit = f.fit->b_crit;
  if (f.bootstrap) out.b_crit_interval = f.bootstrap->b_crit;
  out.b_crit_se = f.fit->b_crit_se;
  if (f.definitions) out.measured_excess = f.definitions->measured_excess;
  out.definitions = f.definitions;
  return out;
}

}  // namespace

std::optional<double> crossing_step(const std::vector<std::pair<double, double>>& curve,
                                    double target, bool lower_is_better) {
  auto reached = [&](double v) { return lower_is_better ? v <= target : v >= target; };
  for (size_t i = 0; i < curve.size(); ++i) {
    const auto [step, value] = curve[i];
    if (!std::isfinite(value) || !reached(value)) continue;
    if (i == 0 || !(step > 0.0) || !(curve[i - 1].first > 0.0)) return step;
    const auto [s0, v0] = curve[i - 1];
    if (v0 == value) return step;
    const double t = std::clamp((target - v0) / (value - v0), 0.0, 1.0);
    return std::exp(std::log(s0) + t * (std::log(step) - std::log(s0)));
  }
  return std::nullopt;
}

std::vector<TargetRung> target_ladder(const StudyRecords& records, const TrialCurves& curves) {
  std::set<config::Target> targets;
  for (const auto& c : records.cells) targets.insert(c.target);
  if (targets.size() != 1 || curves.empty()) return {};
  const config::Target& final_target = *targets.begin();
  const bool lower = final_target.lower_is_better();
  std::vector<TargetRung> out;
  for (double shift : kTargetLadder) {
    TargetRung rung{
        final_target.metric, final_target.value * (lower ? 1.0 + shift : 1.0 - shift), {}};
    const auto report = study_report_of(records_at(records, curves, rung.target, lower));
    for (const auto& f : report.fits) rung.fits.push_back(rung_fit(f));
    out.push_back(std::move(rung));
  }
  return out;
}

TrialCurves read_trial_curves(const std::string& db_path, const StudyRecords& records) {
  TrialCurves out;
  if (records.cells.empty()) return out;
  const std::string metric = records.cells.front().target.metric;
  static const std::set<std::string> columns = {"val_loss", "val_acc",    "test_loss",
                                                "test_acc", "train_loss", "train_acc"};
  if (!columns.count(metric)) return out;
  const auto exists = results::query_readonly(
      db_path, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'evals'");
  if (to_number(exists.rows.at(0)[0]).value_or(0) == 0) return out;
  const auto result = results::query_readonly(
      db_path, "SELECT e.run_id, e.step, e." + metric +
                   " FROM evals e JOIN study_trials t ON t.run_id = e.run_id ORDER BY e.run_id, "
                   "e.step");
  for (const auto& row : result.rows) {
    const auto step = to_number(row[1]), value = to_number(row[2]);
    if (row[0] && step && value) out[*row[0]].push_back({*step, *value});
  }
  return out;
}

namespace {

// The measured 20% batch, "> B" when no batch up to the largest crosses, "" without a fit.
std::string measured_ladder_text(const TargetRungFit& f) {
  if (!f.definitions) return "";
  if (f.measured_excess) return fmt::format("{:.0f}", *f.measured_excess);
  return fmt::format("> {:.0f}", f.definitions->largest_batch);
}

}  // namespace

results::QueryResult target_ladder_table(const std::vector<TargetRung>& rungs) {
  TableBuilder b;
  for (const auto& rung : rungs) {
    for (const auto& f : rung.fits) {
      b.text("target", fmt::format("{} {:.4g}", rung.metric, rung.target));
      b.text("series", f.series);
      b.integer("batches", f.batches);
      b.number("S_min", f.s_min, "{:.0f}");
      b.number("B_crit", f.b_crit, "{:.0f}");
      b.text("B_crit_interval",
             f.b_crit_interval ? fmt::format("95% {:.0f}-{}", f.b_crit_interval->low,
                                             std::isinf(f.b_crit_interval->high)
                                                 ? std::string("inf")
                                                 : fmt::format("{:.0f}", f.b_crit_interval->high))
             : !f.b_crit ? std::string()
             : f.b_crit_se ? fmt::format("fewer than 3 seeds at a batch; se {:.0f}", *f.b_crit_se)
                           : std::string("fewer than 3 seeds at a batch; no se (2 batches)"));
      b.text("20%_measured", measured_ladder_text(f));
      b.text("20%_measured_interval", f.definitions
                                          ? spread_text(f.definitions->measured_excess_spread,
                                                        measured_unbounded(*f.definitions))
                                          : "");
      b.end_row();
    }
  }
  return b.table;
}

std::string target_ladder_section(const std::vector<TargetRung>& rungs, results::QueryFormat format,
                                  const std::string& gap) {
  if (rungs.empty()) return "";
  return gap +
         "B_crit against the target (analysis/target_ladder.h): the same trials' evaluations read "
         "at shallower targets, each cell's steps the earliest crossing over its trials, every "
         "series refitted. Caveat: the rates were searched for the final target, so a shallow "
         "rung uses rates chosen for a deeper one (too small for it, more so at small batches): "
         "its small-batch steps are biased up and its B_crit a little down.\n" +
         gap + results::format_result(target_ladder_table(rungs), format, kAbsentCell) + "\n";
}

nlohmann::json target_ladder_json(const std::vector<TargetRung>& rungs) {
  using nlohmann::json;
  auto optional = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  json out = json::array();
  for (const auto& rung : rungs) {
    json fits = json::array();
    for (const auto& f : rung.fits) {
      json interval = nullptr;
      if (f.b_crit_interval) {
        const auto& i = *f.b_crit_interval;
        interval = json::array({i.low, std::isinf(i.high) ? json(nullptr) : json(i.high)});
      }
      fits.push_back(
          {{"series", f.series},
           {"batches", f.batches},
           {"s_min", optional(f.s_min)},
           {"b_crit", optional(f.b_crit)},
           {"b_crit_interval", interval},
           {"b_crit_se", optional(f.b_crit_se)},
           {"measured_excess", optional(f.measured_excess)},
           {"measured_excess_spread",
            f.definitions ? spread_json(f.definitions->measured_excess_spread) : json(nullptr)}});
    }
    out.push_back({{"metric", rung.metric}, {"target", rung.target}, {"fits", fits}});
  }
  return out;
}

}  // namespace batchlab::analysis
