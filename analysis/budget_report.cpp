#include "analysis/budget_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "results/errors.h"
#include "results/query.h"

namespace batchlab::analysis {

namespace {

using Row = std::vector<std::optional<std::string>>;

std::optional<double> budget_real(const std::optional<std::string>& t) {
  if (!t) return std::nullopt;
  try {
    return std::stod(*t);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

int64_t budget_integer(const std::optional<std::string>& t) {
  return t ? static_cast<int64_t>(std::stoll(*t)) : 0;
}

// `key = value` lines (a point) or `key = [v1, v2]` lines (the knobs tried).
std::vector<std::pair<std::string, std::string>> budget_key_lines(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    const auto eq = line.find(" = ");
    if (eq != std::string::npos) out.emplace_back(line.substr(0, eq), line.substr(eq + 3));
    start = end + 1;
  }
  return out;
}

std::vector<std::string> budget_list_values(std::string text) {
  if (text.size() >= 2 && text.front() == '[') text = text.substr(1, text.size() - 2);
  std::vector<std::string> out;
  int depth = 0;
  std::string item;
  for (char c : text) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(item);
      item.clear();
      continue;
    }
    if (!(item.empty() && c == ' ')) item += c;
  }
  if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<KnobChoice> knob_choices(const std::string& knobs, const std::string& best_point) {
  std::map<std::string, std::string> best;
  for (auto& [k, v] : budget_key_lines(best_point)) best[k] = v;
  std::vector<KnobChoice> out;
  for (auto& [key, values] : budget_key_lines(knobs)) {
    KnobChoice c{key, budget_list_values(values), best.count(key) ? best[key] : "", ""};
    std::vector<double> numbers;
    for (const auto& v : c.tried) {
      if (auto x = budget_real(v)) numbers.push_back(*x);
    }
    const auto chosen = budget_real(c.best);
    if (chosen && numbers.size() == c.tried.size() && numbers.size() > 1) {
      const auto [lo, hi] = std::minmax_element(numbers.begin(), numbers.end());
      if (*chosen <= *lo) c.edge = "low";
      if (*chosen >= *hi) c.edge = "high";
    }
    out.push_back(std::move(c));
  }
  return out;
}

struct CellRecord {
  std::string cell_id, optimizer, series, status, rung_steps, knobs;
  int64_t batch = 0, seed = 0, budget_steps = 0, points = 0, trials = 0, samples = 0;
  std::optional<double> epochs;
  std::optional<std::string> best_run_id, best_point, first_seed_cell;
};

std::vector<CellRecord> read_budget_cells(const std::string& db) {
  const auto result = results::query_readonly(
      db,
      "SELECT cell_id, optimizer, series, status, rung_steps, knobs, global_batch, seed, "
      "budget_steps, points, trials, samples_trained, epochs, best_run_id, best_point, "
      "first_seed_cell FROM budget_cells ORDER BY series, global_batch, seed",
      {});
  std::vector<CellRecord> out;
  for (const Row& r : result.rows) {
    CellRecord c;
    c.cell_id = r[0].value_or("");
    c.optimizer = r[1].value_or("");
    c.series = r[2].value_or("");
    c.status = r[3].value_or("");
    c.rung_steps = r[4].value_or("");
    c.knobs = r[5].value_or("");
    c.batch = budget_integer(r[6]);
    c.seed = budget_integer(r[7]);
    c.budget_steps = budget_integer(r[8]);
    c.points = budget_integer(r[9]);
    c.trials = budget_integer(r[10]);
    c.samples = budget_integer(r[11]);
    c.epochs = budget_real(r[12]);
    c.best_run_id = r[13];
    c.best_point = r[14];
    c.first_seed_cell = r[15];
    out.push_back(std::move(c));
  }
  return out;
}

// The run's evaluation at the end of its budget (nullopt: it has not got there).
std::optional<BudgetSeedRun> budget_final_eval(const std::string& db, const CellRecord& c) {
  if (!c.best_run_id) return std::nullopt;
  const auto result = results::query_readonly(
      db,
      "SELECT val_loss, val_acc, test_loss, test_acc, epoch FROM evals WHERE run_id = ?1 AND "
      "step = ?2",
      {*c.best_run_id, std::to_string(c.budget_steps)});
  if (result.rows.empty()) return std::nullopt;
  const Row& r = result.rows.front();
  return BudgetSeedRun{c.seed,
                       *c.best_run_id,
                       budget_real(r[0]),
                       budget_real(r[1]),
                       budget_real(r[2]),
                       budget_real(r[3]),
                       budget_real(r[4])};
}

void summarize_budget_batch(BudgetBatch& b) {
  std::vector<double> tl, ta, vl;
  for (const auto& s : b.seeds) {
    if (s.test_loss) tl.push_back(*s.test_loss);
    if (s.test_acc) ta.push_back(*s.test_acc);
    if (s.val_loss) vl.push_back(*s.val_loss);
  }
  b.test_loss = seed_interval(tl);
  b.test_acc = seed_interval(ta);
  b.val_loss = seed_interval(vl);
}

SeedsByBatch budget_seeds_of(const BudgetSeries& s, bool loss) {
  SeedsByBatch out;
  for (const auto& b : s.batches) {
    auto& v = out[b.batch];
    for (const auto& r : b.seeds) {
      const auto& x = loss ? r.test_loss : r.test_acc;
      if (x) v.push_back(*x);
    }
  }
  return out;
}

// The runs whose resolved configs stand for each (series, batch) in the series' settings: the best
// run of every seed once the search has chosen, else the first seed's trials so far.
using SettingsRuns = std::map<std::string, std::map<int64_t, std::vector<std::string>>>;

void add_settings_runs(const std::string& db, const CellRecord& c, SettingsRuns& runs) {
  auto& ids = runs[c.series][c.batch];
  if (c.best_run_id) {
    ids.push_back(*c.best_run_id);
    return;
  }
  if (c.first_seed_cell) return;  // a later seed reruns the best point: nothing to add yet
  const auto trials = results::query_readonly(
      db, "SELECT run_id FROM budget_trials WHERE cell_id = ?1 ORDER BY run_id", {c.cell_id});
  for (const Row& r : trials.rows) ids.push_back(r[0].value_or(""));
}

// A batch keeps its best runs alone once it has any (the trials added before them go).
SeriesSettings budget_series_settings(const std::string& series,
                                      const std::map<int64_t, std::vector<std::string>>& batches,
                                      const std::map<std::string, std::string>& configs,
                                      const std::set<std::string>& best) {
  SeriesRuns runs{series, {}};
  for (const auto& [batch, ids] : batches) {
    std::vector<std::string> chosen;
    for (const auto& id : ids) {
      if (best.count(id)) chosen.push_back(id);
    }
    runs.cells.push_back(chosen.empty() ? ids : chosen);
  }
  return series_settings({runs}, configs).front();
}

std::map<std::string, std::string> budget_configs(const std::string& db) {
  std::map<std::string, std::string> out;
  const auto result = results::query_readonly(
      db, "SELECT run_id, config_toml FROM runs WHERE config_toml IS NOT NULL", {});
  for (const Row& r : result.rows) out[r[0].value_or("")] = r[1].value_or("");
  return out;
}

}  // namespace

double BudgetBatch::run_equivalents() const {
  const double full = static_cast<double>(budget_steps) * static_cast<double>(batch);
  return full > 0 ? static_cast<double>(search_samples) / full : 0.0;
}

SeedsByBatch BudgetSeries::test_loss_seeds() const { return budget_seeds_of(*this, true); }
SeedsByBatch BudgetSeries::test_acc_seeds() const { return budget_seeds_of(*this, false); }

bool has_budget_search(const std::string& db_path) {
  try {
    return !results::query_readonly(db_path, "SELECT 1 FROM budget_cells LIMIT 1", {}).rows.empty();
  } catch (const results::StoreError&) {
    return false;
  }
}

BudgetReport build_budget_report(const std::string& db_path) {
  BudgetReport report;
  report.db = db_path;
  std::map<std::string, BudgetSeries> by_series;
  std::map<std::pair<std::string, int64_t>, BudgetBatch> batches;
  SettingsRuns settings_runs;
  std::set<std::string> best_runs;
  for (const auto& c : read_budget_cells(db_path)) {
    add_settings_runs(db_path, c, settings_runs);
    if (c.best_run_id) best_runs.insert(*c.best_run_id);
    BudgetSeries& s = by_series[c.series];
    s.series = c.series;
    s.optimizer = c.optimizer;
    s.trials += c.trials;
    s.samples += c.samples;
    BudgetBatch& b = batches[{c.series, c.batch}];
    b.batch = c.batch;
    b.budget_steps = c.budget_steps;
    b.epochs = c.epochs;
    if (!c.first_seed_cell) {
      b.status = c.status;
      b.rung_steps = c.rung_steps;
      b.points = c.points;
      b.search_trials = c.trials;
      b.search_samples = c.samples;
      if (c.best_point) b.knobs = knob_choices(c.knobs, *c.best_point);
    } else {
      b.rerun_samples += c.samples;
    }
    if (auto run = budget_final_eval(db_path, c)) {
      // A budget in samples has its epochs only from the run (the data's size is known there).
      if (!b.epochs) b.epochs = run->epoch;
      b.seeds.push_back(*run);
    }
  }
  for (auto& [key, b] : batches) {
    summarize_budget_batch(b);
    by_series[key.first].batches.push_back(std::move(b));
  }
  const auto configs = budget_configs(db_path);
  for (auto& [name, s] : by_series) {
    s.settings = budget_series_settings(name, settings_runs[name], configs, best_runs);
    s.test_loss_trend = bootstrap_slope(s.test_loss_seeds());
    s.test_acc_trend = bootstrap_slope(s.test_acc_seeds());
    report.series.push_back(std::move(s));
  }
  return report;
}

}  // namespace batchlab::analysis
