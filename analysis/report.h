// `batchlab report`: what a sweep database says per group of runs (default: optimizer x global
// batch). For each group: how many runs and seeds, the final and best test metric (mean and
// standard deviation over seeds), the generalization gap at the end and when each target was first
// reached, the steps / epochs / samples / training-clock seconds to each target, how many runs
// diverged, and the peak learning rate.
//
// Learning-rate tuning: when the runs of a group differ in base_lr (an LR grid that is not one of
// the group-by keys), the group reports its best LR and the other columns describe that LR's runs
// only, as large-batch studies report "the best tuned result per batch size" (Shallue et al. 2019;
// Nado et al. 2021). The best LR is chosen on held-out validation data only (the mean over seeds
// of the last validation evaluation: highest val_acc or lowest val_loss among finished runs); test
// metrics are reported, never used to choose. A group whose runs have no validation rows (no
// data.val_size, or a database older than schema v3) selects no LR and its note says why. When the
// best LR is the smallest or the largest of the group's grid, the optimum may lie outside it: the
// row is flagged and a warning names the group.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/config/target.h"
#include "results/query_result.h"

namespace batchlab::analysis {

struct ReportOptions {
  // Keys to group by: a column of the runs table (optimizer, global_batch, model, scaling, ...), or
  // a config key path with a dot (optim.weight_decay), read from each run's resolved config.
  std::vector<std::string> group_by = {"optimizer", "global_batch"};
  // An SQL condition on the runs table (alias r), e.g. "r.optimizer IN ('lars', 'lamb')".
  std::string where;
  // Only the runs of this sweep (runs.sweep_id), when set.
  std::optional<std::string> sweep_id;
  // The reported test metric of the final/best columns: test_acc (higher is better) or test_loss
  // (lower is better).
  std::string metric = "test_acc";
  // The validation metric that selects the best LR: val_acc (higher is better) or val_loss.
  std::string select_by = "val_acc";
};

// Throws InputError unless `name` is a validation metric a best LR may be chosen on (val_acc,
// val_loss); a test_* or train_* metric is refused with a message that says to use a val_ metric
// and how to get one. The one definition of the rule, for the report and its callers.
void check_selection_metric(const std::string& name);

// Mean and sample standard deviation (n - 1) of the values present; stddev is absent below n = 2.
struct Stat {
  int n = 0;
  double mean = 0.0;
  std::optional<double> stddev;
  static Stat of(const std::vector<double>& values);
};

// Runs of the group's selected LR that reached one target, and when (means over those runs).
struct TargetResult {
  int reached = 0;
  int finished = 0;  // done runs of the selected LR
  Stat steps, epochs, samples, train_s;
  Stat gap_acc;  // train_acc - test_acc at the evaluation that reached the target
};

struct ReportRow {
  std::vector<std::string> key;      // one value per group-by key
  std::vector<std::string> run_ids;  // every run of the group
  int runs = 0;                      // every run of the group, whatever its status and LR
  int seeds = 0;                     // distinct seeds among them
  int done = 0, diverged = 0, failed = 0, unfinished = 0;  // unfinished: planned/running/preempted
  std::map<std::string, int> statuses;                     // runs per runs.status
  int lr_values = 0;                                       // distinct base_lr values in the group
  std::optional<double> base_lr;                           // the selected (best) base LR
  std::optional<double> peak_lr;  // its peak LR (mean: equal for equal batch and rule)
  std::string lr_edge;            // "", "low" or "high": the selected LR sits at the grid's edge
  std::string selection_note;     // why no LR was selected ("" when one was or none was needed)
  // The selected LR's done runs whose final test accuracy is at or below chance (runs.chance_acc,
  // 1 / classes), and that chance level: a run that learned nothing, noted in the table.
  int at_chance = 0;
  std::optional<double> chance_acc;
  Stat final_metric, best_metric, gap_acc, gap_loss;  // over the selected LR's done runs
  Stat selection_metric;  // the validation metric the LR was chosen on, over the same runs
  Stat train_s;           // the training clock at the end of the selected LR's done runs
  std::vector<TargetResult> targets;  // parallel to Report::targets
};

struct Report {
  std::vector<std::string> group_by;
  std::string metric;
  std::string select_by;
  // Every (metric, value) found in the selected runs' milestones.
  std::vector<config::Target> targets;
  // Group-by keys and descriptive run columns with one value across every selected run: shown once
  // above the table instead of as columns.
  std::vector<std::pair<std::string, std::string>> constants;
  std::vector<bool> key_shown;  // parallel to group_by: false for a constant key
  std::vector<ReportRow> rows;
  std::vector<std::string> warnings;
  int total_runs = 0;
};

// Reads the database (read-only) and builds the report. Throws InputError for an unknown group-by
// key (listing the runs columns), an unknown metric, a selection metric that is not a validation
// metric, or a --where that SQLite rejects; StoreInputError for a missing database file.
Report build_report(const std::string& db_path, const ReportOptions& options);

// The report as one result table: the shown group-by keys, then runs, seeds, lr (selected base LR
// and grid size), peak_lr, final and best metric (mean, std), gaps, per target
// reached/steps/epochs/ samples/train_s/gap, diverged, note.
results::QueryResult report_table(const Report& report);

// The note of a group whose selected runs ended at or below chance ("2 runs at or below chance
// (10.0% test accuracy)"), "" when none did: the run report's table and the closing table of
// `sweep run` both write it.
std::string chance_note(const ReportRow& row);

// table / markdown: constants and targets as a header, the table, warnings after it. csv: the table
// only. json: {"group_by", "metric", "select_by", "constants", "targets", "rows": [...],
// "warnings"}.
std::string format_report(const Report& report, results::QueryFormat format);

}  // namespace batchlab::analysis
