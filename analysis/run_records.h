// The per-run facts the analysis commands need, read from a sweep database in a handful of
// read-only queries: identity and status, the group-by values, the final and best evaluation, and
// every milestone with the generalization gap at the evaluation that reached it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

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
  std::vector<std::string> key;  // values of the requested keys, "" when absent
  // Columns of the runs table that describe the setting (model, dataset, optimizer, scaling,
  // global_batch, micro_batch, world_size), for the "constant parameters" line.
  std::map<std::string, std::string> descriptors;
  // The last evaluation.
  std::optional<double> final_acc, final_loss, final_gap_acc, final_gap_loss;
  // The best test accuracy / lowest test loss over all evaluations.
  std::optional<double> best_acc, best_loss;
  std::vector<MilestoneRecord> milestones;
  // Targets declared in the run's config (train.target), reached or not.
  std::vector<std::pair<std::string, double>> declared_targets;
};

// Columns of the runs table, in schema order (for messages and key validation).
std::vector<std::string> runs_columns(const std::string& db_path);

// Reads every run matching `where` (an SQL condition on runs aliased r; "" = all). `keys` are runs
// columns or dotted config key paths. Throws InputError naming an unknown key (with the valid
// columns) or a `where` that SQLite rejects.
std::vector<RunRecord> read_run_records(const std::string& db_path,
                                        const std::vector<std::string>& keys,
                                        const std::string& where);

// A number from a query cell; nullopt for NULL or text that is not one.
std::optional<double> to_number(const std::optional<std::string>& cell);

}  // namespace batchlab::analysis
