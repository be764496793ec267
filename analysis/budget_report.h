// The report of a fixed-budget search ([search]; sweeps/study/budget_plan.h), read from the budget
// tables and the best runs' final evaluations alone:
//   - per series (an optimizer line) and batch: the budget (epochs, steps), the best point with
//     every searched knob's value and whether it sits at an edge of what was tried, what the
//     search spent (trials, samples, full-run equivalents), and the final metrics per seed at that
//     point: the test split's loss and accuracy (never selected on: the published numbers) with
//     their mean and interval over seeds, and the validation loss the point was chosen on;
//   - per series: the budget spent in all (equal budgets are what makes a comparison fair) and
//     the trend of the final test loss against log2(batch) with its interval over seeds;
// Comparing two of its series is analysis/budget_compare.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/budget_stats.h"
#include "analysis/series_settings.h"
#include "results/query_result.h"

namespace batchlab::analysis {

struct KnobChoice {
  std::string key;
  std::vector<std::string> tried;  // in the order tried
  std::string best;
  std::string edge;  // "low", "high" (a numeric knob whose best is its smallest / largest value
                     // tried) or "" (interior, or not numeric)
};

struct BudgetSeedRun {
  int64_t seed = 0;
  std::string run_id;
  std::optional<double> val_loss, val_acc, test_loss, test_acc;
  std::optional<double> epoch;  // where the budget ended, in epochs of the run's training split
};

struct BudgetBatch {
  int64_t batch = 0;
  int64_t budget_steps = 0;
  std::optional<double> epochs;
  std::string status;  // the first seed's cell: searching | done | failed
  std::string rung_steps;
  std::vector<KnobChoice> knobs;  // empty until the search is done
  int64_t points = 0;
  int64_t search_trials = 0, search_samples = 0;  // the first seed's search
  int64_t rerun_samples = 0;                      // the later seeds' runs
  std::vector<BudgetSeedRun> seeds;               // the runs with a final evaluation
  std::optional<SeedInterval> test_loss, test_acc, val_loss;
  // The search's samples over one full run's (budget steps x batch).
  double run_equivalents() const;
};

struct BudgetSeries {
  std::string series;
  std::string optimizer;
  std::vector<BudgetBatch> batches;  // ascending
  int64_t trials = 0, samples = 0;   // the whole line: searches and reruns
  std::optional<Slope> test_loss_trend, test_acc_trend;
  // The line's optimizer settings (analysis/series_settings.h), one cell per batch: the best runs'
  // resolved configs once its search has chosen, its trials' while it is searching (the searched
  // knobs then read "searched: ...").
  SeriesSettings settings;
  SeedsByBatch test_loss_seeds() const;
  SeedsByBatch test_acc_seeds() const;
};

struct BudgetReport {
  std::string db;
  std::string metric = "val_loss";  // the selection metric (from the stored spec: val_loss)
  std::vector<BudgetSeries> series;
  std::vector<std::string> notes;
};

// Whether the database holds a fixed-budget search (budget_cells rows).
bool has_budget_search(const std::string& db_path);

// Throws results::StoreError for a database that cannot be read.
BudgetReport build_budget_report(const std::string& db_path);
std::string format_budget_report(const BudgetReport& report, results::QueryFormat format);

}  // namespace batchlab::analysis
