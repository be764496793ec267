#include "analysis/study_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <tuple>
#include <utility>

#include "analysis/run_records.h"

namespace batchlab::analysis {

namespace {

// Axes that are columns of their own (optimizer, batch, seed) or that the study searches (the LR):
// the rest of a cell's axes are its setting.
bool is_own_column(const std::string& key) {
  static const std::set<std::string> keys = {"optim.name",    "batch.global", "train.seed",  "seed",
                                             "optim.base_lr", "optimizer",    "global_batch"};
  return keys.count(key) > 0;
}

std::map<std::string, std::string> setting_values(const StudyCellRecord& cell) {
  auto values = flatten_toml(cell.cell_toml);
  for (auto it = values.begin(); it != values.end();) {
    it = is_own_column(it->first) ? values.erase(it) : std::next(it);
  }
  return values;
}

std::string join_values(const std::map<std::string, std::string>& values,
                        const std::set<std::string>* only) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : values) {
    if (only == nullptr || only->count(k)) parts.push_back(k + "=" + v);
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

// The keys among `settings` (the cells' setting values, those of `only` when given) that take more
// than one value or are missing from some of them.
std::set<std::string> varying_keys(const std::vector<std::map<std::string, std::string>>& settings,
                                   const std::vector<size_t>& only) {
  std::map<std::string, std::set<std::string>> values_of;
  std::map<std::string, size_t> count_of;
  for (size_t i : only) {
    for (const auto& [k, v] : settings[i]) {
      values_of[k].insert(v);
      ++count_of[k];
    }
  }
  std::set<std::string> out;
  for (const auto& [k, values] : values_of) {
    if (values.size() > 1 || count_of[k] != only.size()) out.insert(k);
  }
  return out;
}

// Settings and series labels: a series is an optimizer plus the setting keys that vary among that
// optimizer's cells. A key constant over every cell would only lengthen every label (it is named
// once); one that varies only between optimizers is in each cell's setting but no label (the text
// study's trust coefficient is an axis for LARS alone: "lamb", not "lamb
// optim.trust_coefficient=0.001").
void label_cells(const std::vector<StudyCellRecord>& cells, StudyReport& report) {
  auto& out = report.cells;
  std::vector<std::map<std::string, std::string>> settings;
  std::vector<size_t> all;
  std::map<std::string, std::vector<size_t>> by_optimizer;
  for (size_t i = 0; i < cells.size(); ++i) {
    settings.push_back(setting_values(cells[i]));
    all.push_back(i);
    by_optimizer[cells[i].optimizer].push_back(i);
  }
  const std::set<std::string> varying = varying_keys(settings, all);
  if (!cells.empty()) {
    for (const auto& [k, v] : settings.front()) {
      if (varying.count(k) == 0) report.constants.push_back(k + "=" + v);
    }
  }
  std::map<std::string, std::set<std::string>> labelled;
  for (const auto& [optimizer, members] : by_optimizer) {
    labelled[optimizer] = varying_keys(settings, members);
  }
  for (size_t i = 0; i < cells.size(); ++i) {
    StudyCellSummary s;
    s.cell = cells[i];
    s.setting = join_values(settings[i], nullptr);
    s.varying = join_values(settings[i], &labelled[cells[i].optimizer]);
    s.series = s.varying.empty() ? cells[i].optimizer : cells[i].optimizer + " " + s.varying;
    out.push_back(std::move(s));
  }
}

// LR points and the basin: reached trials within kBasinFactor of the cell's best steps.
void summarize_trials(const std::vector<StudyTrialRecord>& trials,
                      std::vector<StudyCellSummary>& cells) {
  std::map<std::string, StudyCellSummary*> by_id;
  for (auto& c : cells) by_id[c.cell.cell_id] = &c;
  for (const auto& t : trials) {
    auto it = by_id.find(t.cell_id);
    if (it != by_id.end()) it->second->trials.push_back(t);
  }
  for (auto& c : cells) {
    c.lr_points = static_cast<int>(c.trials.size());
    std::optional<double> best = c.cell.steps_to_target;
    for (const auto& t : c.trials) {
      if (t.outcome == "reached" && t.steps_to_target && (!best || *t.steps_to_target < *best)) {
        best = t.steps_to_target;
      }
    }
    c.pruned_neighbours = pruned_neighbours(c.cell, c.trials);
    if (!best) continue;
    c.basin_width = static_cast<int>(std::count_if(c.trials.begin(), c.trials.end(), [&](auto& t) {
      return t.outcome == "reached" && t.steps_to_target &&
             *t.steps_to_target <= kBasinFactor * *best;
    }));
  }
}

// Cells that differ only in the seed: how many, and the range of their steps to target.
void summarize_seeds(std::vector<StudyCellSummary>& cells) {
  using Key = std::tuple<std::string, std::string, int64_t>;
  std::map<Key, std::vector<StudyCellSummary*>> groups;
  for (auto& c : cells) groups[{c.cell.optimizer, c.setting, c.cell.global_batch}].push_back(&c);
  for (auto& [key, members] : groups) {
    std::optional<double> low, high;
    for (const auto* c : members) {
      if (!c->cell.steps_to_target) continue;
      low = std::min(low.value_or(*c->cell.steps_to_target), *c->cell.steps_to_target);
      high = std::max(high.value_or(*c->cell.steps_to_target), *c->cell.steps_to_target);
    }
    for (auto* c : members) {
      c->seeds = static_cast<int>(members.size());
      if (members.size() > 1) {
        c->seed_min = low;
        c->seed_max = high;
      }
    }
  }
}

std::string cell_name(const StudyCellSummary& c) {
  return fmt::format("batch {} seed {}", c.cell.global_batch, c.cell.seed);
}

// The run average of B_simple per trial, then the mean over the series' trials.
void average_noise_scale(const StudyCellSummary& c, const StudyRecords& records,
                         std::vector<double>& run_means) {
  for (const auto& t : c.trials) {
    auto it = records.b_simple.find(t.run_id);
    if (it == records.b_simple.end() || it->second.empty()) continue;
    double sum = 0.0;
    for (double v : it->second) sum += v;
    run_means.push_back(sum / static_cast<double>(it->second.size()));
  }
}

// B_simple of a series: the mean of its runs' averages, their range and the mean's spread.
void summarize_noise_scale(const std::vector<double>& run_means, SeriesFit& out) {
  out.b_simple_spread = results::noise_scale_spread(run_means);
  if (run_means.empty()) return;
  const double sum = std::accumulate(run_means.begin(), run_means.end(), 0.0);
  out.b_simple = sum / static_cast<double>(run_means.size());
  out.b_simple_runs = static_cast<int>(run_means.size());
  const auto [low, high] = std::minmax_element(run_means.begin(), run_means.end());
  out.b_simple_range = results::Interval{*low, *high};
}

// The series' cells at one batch size, by status; the seeds as sets, so a seed with a cell in two
// sweeps counts once.
struct BatchCells {
  std::set<int64_t> seeds, reached_seeds, censored_seeds, searching_seeds;
  std::vector<const StudyCellSummary*> reached;
  int64_t cap_steps = 0;  // the largest cap of the censored cells
};

bool has_reached(const StudyCellSummary& c) {
  return c.cell.status == "reached" && c.cell.steps_to_target && *c.cell.steps_to_target > 0;
}

// One point per batch size (results/seed_bootstrap.h): a batch counts as reached only when every
// seed that finished reached, since a mean over the seeds that happened to reach would be biased
// low; cells still searching stay out until they finish.
SeriesFit fit_series(const std::string& series, const std::vector<const StudyCellSummary*>& cells,
                     const StudyRecords& records) {
  SeriesFit out;
  out.series = series;
  out.optimizer = cells.front()->cell.optimizer;
  std::map<int64_t, BatchCells> batches;
  std::vector<double> run_means;
  for (const auto* c : cells) {
    average_noise_scale(*c, records, run_means);
    auto& batch = batches[c->cell.global_batch];
    batch.seeds.insert(c->cell.seed);
    if (has_reached(*c)) {
      batch.reached.push_back(c);
      batch.reached_seeds.insert(c->cell.seed);
    } else if (c->cell.status == "censored") {
      batch.censored_seeds.insert(c->cell.seed);
      batch.cap_steps = std::max(batch.cap_steps, c->cell.cap_steps);
    } else {
      batch.searching_seeds.insert(c->cell.seed);
      out.searching.push_back(cell_name(*c));
    }
  }
  std::vector<results::SeedSteps> fitted;  // the reached cells of the batches that are points
  std::vector<results::FitPoint> censored;
  for (const auto& [batch, b] : batches) {
    out.batch_seeds.push_back({batch, static_cast<int>(b.seeds.size()),
                               static_cast<int>(b.reached_seeds.size()),
                               static_cast<int>(b.searching_seeds.size())});
    if (!b.censored_seeds.empty()) {
      std::set<int64_t> decided = b.reached_seeds;
      decided.insert(b.censored_seeds.begin(), b.censored_seeds.end());
      censored.push_back({static_cast<double>(batch), static_cast<double>(b.cap_steps), true,
                          fmt::format("batch {} ({} of {} seeds reached)", batch,
                                      b.reached_seeds.size(), decided.size())});
      continue;
    }
    for (const auto* c : b.reached) {
      fitted.push_back({static_cast<double>(batch), c->cell.seed, *c->cell.steps_to_target});
    }
  }
  auto points = results::seed_mean_points(fitted);
  points.insert(points.end(), censored.begin(), censored.end());
  out.fit = results::fit_scaling(points);
  out.fitted_cells = fitted;
  if (out.fit) {
    out.lack_of_fit = results::lack_of_fit(*out.fit, fitted);
    out.bootstrap = results::bootstrap_seed_fit(fitted);
    if (!out.bootstrap) out.seed_range = results::per_seed_range(fitted);
    out.definitions = results::critical_batches(*out.fit, fitted);
  }
  summarize_noise_scale(run_means, out);
  return out;
}

std::vector<SeriesFit> fit_all(const std::vector<StudyCellSummary>& cells,
                               const StudyRecords& records) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const StudyCellSummary*>> by_series;
  for (const auto& c : cells) {
    auto& members = by_series[c.series];
    if (members.empty()) order.push_back(c.series);
    members.push_back(&c);
  }
  std::vector<SeriesFit> fits;
  for (const auto& series : order) fits.push_back(fit_series(series, by_series[series], records));
  return fits;
}

// "64: 3, 128: 3, 256: 1" when the batch sizes of a series ran with different numbers of seeds; a
// batch with a seed still searching is left out (a ladder opens a batch's later seeds after its
// first, so a running study would be flagged at every new batch).
std::optional<std::string> unequal_seeds(const SeriesFit& f) {
  std::set<int> counts;
  std::vector<std::string> parts;
  for (const auto& b : f.batch_seeds) {
    if (b.searching > 0) continue;  // a batch still opening its seeds is not yet the design
    counts.insert(b.seeds);
    parts.push_back(fmt::format("{}: {}", b.batch, b.seeds));
  }
  if (counts.size() < 2) return std::nullopt;
  return fmt::format("{}", fmt::join(parts, ", "));
}

// How many cells' best rate is interior only because a neighbour was pruned.
std::optional<std::string> pruning_warning(const std::vector<StudyCellSummary>& cells) {
  std::vector<std::string> names;
  for (const auto& c : cells) {
    if (!c.pruned_neighbours.empty()) names.push_back(c.cell.optimizer + " " + cell_name(c));
  }
  if (names.empty()) return std::nullopt;
  return fmt::format(
      "{} of {} cells have a best LR that is interior only because a neighbouring LR point was "
      "pruned (marked in the note column; run on, it might have won and moved the search): {}",
      names.size(), cells.size(), fmt::join(names, ", "));
}

// Why a fit's interval is what it is: resamples without a critical batch (all counted), or too few
// seeds for a 95% interval.
std::optional<std::string> interval_warning(const SeriesFit& f) {
  if (f.bootstrap && f.bootstrap->without_b_crit > 0) {
    const auto& b = *f.bootstrap;
    return fmt::format(
        "{}: {} of {} seed resamples gave no critical batch ({} with S_min <= 0, counted as an "
        "unbounded B_crit; {} with E_min <= 0, counted as 0); every resample counts{}",
        f.series, b.without_b_crit, b.resamples, b.unbounded, b.without_b_crit - b.unbounded,
        std::isinf(b.b_crit.high) ? ", so B_crit's 95% interval has no upper end" : "");
  }
  if (f.bootstrap || !f.seed_range) return std::nullopt;
  int fewest = results::kMinSeedsForInterval;  // over the batches that reached
  for (const auto& b : f.batch_seeds) {
    if (b.reached > 0) fewest = std::min(fewest, b.reached);
  }
  return fmt::format(
      "{}: no 95% interval: a batch size has fewer than {} seeds (fewest {}), too few to resample; "
      "the interval columns give the seed range (min-max over {} per-seed fits, not a confidence "
      "interval) and the _se columns the fit's standard errors",
      f.series, results::kMinSeedsForInterval, fewest, f.seed_range->fits);
}

// A curve that misses its batches' means by more than their seeds' spread allows (p < 0.05): its
// S_min, B_crit and their intervals describe the nearest curve of this shape, not the data.
std::optional<std::string> lack_of_fit_warning(const SeriesFit& f) {
  if (!f.lack_of_fit || f.lack_of_fit->p >= results::kLackOfFitLevel) return std::nullopt;
  const auto& t = *f.lack_of_fit;
  return fmt::format(
      "{}: S(B) = S_min + E_min/B does not fit its batches' means within their seeds' spread "
      "(lack-of-fit F = {:.2f} on {} and {} degrees of freedom, p = {:.3g}; furthest at batch "
      "{:g}: "
      "{:.0f} steps measured, {:.0f} on the curve): S_min, B_crit and their intervals are those of "
      "the nearest curve of this shape, read them as rough",
      f.series, t.f, t.dof_lack, t.dof_pure, t.p, t.worst_batch, t.worst_measured, t.worst_fitted);
}

std::vector<std::string> warnings_of(const std::vector<SeriesFit>& fits) {
  std::vector<std::string> out;
  for (const auto& f : fits) {
    if (const auto seeds = unequal_seeds(f)) {
      out.push_back(fmt::format(
          "{}: seeds differ across batch sizes ({}): each batch is one point (the geometric mean "
          "over its seeds){}",
          f.series, *seeds, f.bootstrap ? "; the interval resamples seeds within each batch" : ""));
    }
    if (!f.fit) {
      out.push_back(
          fmt::format("{}: no fit: fewer than 2 batch sizes reached the target", f.series));
      continue;
    }
    if (!f.fit->excluded.empty()) {
      out.push_back(fmt::format("{}: censored batches left out of the fit: {}", f.series,
                                fmt::join(f.fit->excluded, ", ")));
    }
    if (!f.fit->b_crit) {
      out.push_back(fmt::format(
          "{}: S_min = {:.4g}, E_min = {:.4g}: no critical batch (the curve has no positive floor "
          "and slope over the measured batches)",
          f.series, f.fit->s_min, f.fit->e_min));
    }
    if (const auto why = interval_warning(f)) out.push_back(*why);
    if (const auto misfit = lack_of_fit_warning(f)) out.push_back(*misfit);
  }
  return out;
}

// The run ids of each series' trials, cell by cell, in the order of the fits.
std::vector<SeriesRuns> series_runs(const StudyReport& report) {
  std::vector<SeriesRuns> out;
  for (const auto& f : report.fits) {
    SeriesRuns s{f.series, {}};
    for (const auto& c : report.cells) {
      if (c.series != f.series) continue;
      std::vector<std::string> ids;
      for (const auto& t : c.trials) ids.push_back(t.run_id);
      s.cells.push_back(std::move(ids));
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

StudyReport build_study_report(const std::string& db_path, const StudyReportOptions& options) {
  const StudyRecords records = read_study_records(db_path, options.sweep_id);
  StudyReport report = study_report_of(records);
  if (options.target_ladder) {
    report.target_ladder = target_ladder(records, read_trial_curves(db_path, records));
  }
  return report;
}

StudyReport study_report_of(const StudyRecords& records) {
  StudyReport report;
  std::set<std::string> targets;
  for (const auto& c : records.cells) {
    targets.insert(c.target.metric.empty()
                       ? std::string("as given in the table")
                       : fmt::format("{} {:g}", c.target.metric, c.target.value));
  }
  report.targets.assign(targets.begin(), targets.end());
  label_cells(records.cells, report);
  summarize_trials(records.trials, report.cells);
  summarize_seeds(report.cells);
  report.fits = fit_all(report.cells, records);
  report.ladders = summarize_ladders(report.cells, records.ladders);
  report.settings = series_settings(series_runs(report), records.run_configs);
  report.cost = study_cost(records.cells, records.trials);
  report.run_equivalents = run_equivalents(report.cells);
  report.warnings = warnings_of(report.fits);
  if (const auto pruned = pruning_warning(report.cells)) report.warnings.push_back(*pruned);
  return report;
}

}  // namespace batchlab::analysis
