// The per-run facts the analysis commands need, read from a sweep database in a handful of
// read-only queries: identity and status, the group-by values, the final and best evaluation, the
// last validation evaluation, and every milestone with the generalization gap at the evaluation
// that reached it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/config/target.h"

namespace batchlab::analysis {

struct MilestoneRecord {
  std::string metric;
  double target = 0.0;
  std::optional<double> step, epoch, samples, train_s;
  std::optional<double> gap_acc;  // at the evaluation of that step
};

struct RunRecord {
  std::string run_id;
  std::string status;
  std::optional<int64_t> seed;
  std::optional<double> base_lr;
  std::optional<double> peak_lr;
  std::optional<double> train_s;     // the training clock when the run last reported
  std::optional<double> chance_acc;  // 1 / classes of a classifier (schema v7); absent otherwise
  std::vector<std::string> key;      // values of the requested keys, "" when absent
  // Columns of the runs table that describe the setting (model, dataset, optimizer, scaling,
  // global_batch, micro_batch, world_size), for the "constant parameters" line.
  std::map<std::string, std::string> descriptors;
  // The last evaluation.
  std::optional<double> final_acc, final_loss, final_gap_acc, final_gap_loss;
  // The best test accuracy / lowest test loss over all evaluations.
  std::optional<double> best_acc, best_loss;
  // The last evaluation with a validation metric (absent: no validation split, or a database
  // older than schema v3).
  std::optional<double> final_val_acc, final_val_loss;
  std::vector<MilestoneRecord> milestones;
  // Targets declared in the run's config (train.target), reached or not.
  std::vector<config::Target> declared_targets;
};

// Which runs to read.
struct RunFilter {
  std::string where;  // an SQL condition on runs aliased r, from the user; "" = all
  std::optional<std::string> sweep_id;  // only this sweep's runs (a bound value)
};

// Columns of a table, in schema order (for messages, key validation and older schemas).
std::vector<std::string> table_columns(const std::string& db_path, const std::string& table);

// Reads every run matching `filter`. `keys` are runs columns or dotted config key paths. Throws
// InputError naming an unknown key (with the valid columns) or a `where` that SQLite rejects.
std::vector<RunRecord> read_run_records(const std::string& db_path,
                                        const std::vector<std::string>& keys,
                                        const RunFilter& filter);

// Every value of a TOML document by dotted key path ("optim.name" -> "lars"), rendered as the
// report shows config values (strings bare, numbers in their shortest form); arrays count as
// values. Empty when the text does not parse.
std::map<std::string, std::string> flatten_toml(const std::string& text);

// A number from a query cell; nullopt for NULL or text that is not one.
std::optional<double> to_number(const std::optional<std::string>& cell);

}  // namespace batchlab::analysis
