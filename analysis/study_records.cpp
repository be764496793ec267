#include "analysis/study_records.h"

#include <cmath>
#include <set>

#include "analysis/run_records.h"
#include "analysis/study_ladder.h"
#include "results/query.h"

namespace batchlab::analysis {

namespace {

// " WHERE c.sweep_id = ?" with its bound value when a sweep is chosen, over study_cells aliased c.
struct CellFilter {
  std::string clause;
  std::vector<results::QueryParam> params;
};

CellFilter cell_filter(const std::optional<std::string>& sweep_id) {
  if (!sweep_id) return {};
  return {" WHERE c.sweep_id = ?", {*sweep_id}};
}

int64_t integer(const std::optional<std::string>& cell) {
  return static_cast<int64_t>(to_number(cell).value_or(0.0));
}

std::optional<int64_t> optional_integer(const std::optional<std::string>& cell) {
  if (auto v = to_number(cell)) return static_cast<int64_t>(*v);
  return std::nullopt;
}

std::vector<StudyCellRecord> read_cells(const std::string& db_path, const CellFilter& filter) {
  const auto result = results::query_readonly(
      db_path,
      "SELECT c.cell_id, c.sweep_id, c.optimizer, c.global_batch, c.seed, c.cell_toml, "
      "c.target_metric, c.target_value, c.lr_center, c.lr_factor, c.cap_steps, c.warmup_steps, "
      "c.status, c.best_run_id, c.best_lr, c.steps_to_target, c.samples_to_target "
      "FROM study_cells c" +
          filter.clause + " ORDER BY c.optimizer, c.global_batch, c.seed, c.cell_id",
      filter.params);
  std::vector<StudyCellRecord> cells;
  for (const auto& row : result.rows) {
    StudyCellRecord c;
    c.cell_id = row[0].value_or("");
    c.sweep_id = row[1].value_or("");
    c.optimizer = row[2].value_or("");
    c.global_batch = integer(row[3]);
    c.seed = integer(row[4]);
    c.cell_toml = row[5].value_or("");
    c.target = {row[6].value_or(""), to_number(row[7]).value_or(0.0)};
    c.lr_center = to_number(row[8]).value_or(0.0);
    c.lr_factor = to_number(row[9]).value_or(0.0);
    c.cap_steps = integer(row[10]);
    c.warmup_steps = integer(row[11]);
    c.status = row[12].value_or("");
    c.best_run_id = row[13];
    c.best_lr = to_number(row[14]);
    c.steps_to_target = to_number(row[15]);
    c.samples_to_target = to_number(row[16]);
    cells.push_back(std::move(c));
  }
  return cells;
}

std::vector<StudyTrialRecord> read_trials(const std::string& db_path, const CellFilter& filter) {
  const auto result = results::query_readonly(
      db_path,
      "SELECT t.run_id, t.cell_id, t.base_lr, t.lr_index, t.outcome, t.last_step, "
      "t.steps_to_target, t.samples_trained, t.cap_samples, t.reason FROM study_trials t "
      "JOIN study_cells c ON c.cell_id = t.cell_id" +
          filter.clause + " ORDER BY t.cell_id, t.lr_index, t.run_id",
      filter.params);
  std::vector<StudyTrialRecord> trials;
  for (const auto& row : result.rows) {
    StudyTrialRecord t;
    t.run_id = row[0].value_or("");
    t.cell_id = row[1].value_or("");
    t.base_lr = to_number(row[2]).value_or(0.0);
    t.lr_index = integer(row[3]);
    t.outcome = row[4].value_or("");
    t.last_step = optional_integer(row[5]);
    t.steps_to_target = to_number(row[6]);
    t.samples_trained = optional_integer(row[7]);
    t.cap_samples = optional_integer(row[8]);
    t.reason = row[9].value_or("");
    trials.push_back(std::move(t));
  }
  return trials;
}

bool has_table(const std::string& db_path, const char* table) {
  const auto result = results::query_readonly(
      db_path, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?",
      {std::string(table)});
  return integer(result.rows.at(0)[0]) > 0;
}

std::map<std::string, std::vector<double>> read_b_simple(const std::string& db_path,
                                                         const CellFilter& filter) {
  std::map<std::string, std::vector<double>> out;
  if (!has_table(db_path, "noise_scale")) return out;
  const auto result = results::query_readonly(
      db_path,
      "SELECT n.run_id, n.b_simple FROM noise_scale n JOIN study_trials t ON t.run_id = n.run_id "
      "JOIN study_cells c ON c.cell_id = t.cell_id" +
          filter.clause + " ORDER BY n.run_id, n.step",
      filter.params);
  for (const auto& row : result.rows) {
    const auto v = to_number(row[1]);
    // A non-finite estimate (|G|^2 estimated at zero) says nothing about the scale.
    if (v && std::isfinite(*v)) out[row[0].value_or("")].push_back(*v);
  }
  return out;
}

// The ladder rule of each sweep of `cells` whose stored spec has one.
std::map<std::string, results::LadderRule> read_ladders(const std::string& db_path,
                                                        const std::vector<StudyCellRecord>& cells) {
  std::map<std::string, results::LadderRule> out;
  if (cells.empty() || !has_table(db_path, "sweeps")) return out;
  const auto result =
      results::query_readonly(db_path, "SELECT sweep_id, spec_toml FROM sweeps ORDER BY sweep_id");
  std::set<std::string> studied;
  for (const auto& c : cells) studied.insert(c.sweep_id);
  for (const auto& row : result.rows) {
    const std::string id = row[0].value_or("");
    if (studied.count(id) == 0 || !row[1]) continue;
    if (auto rule = ladder_rule_of_spec(*row[1])) out[id] = *rule;
  }
  return out;
}

// The resolved config of every trial's run that has a runs row.
std::map<std::string, std::string> read_run_configs(const std::string& db_path,
                                                    const CellFilter& filter) {
  std::map<std::string, std::string> out;
  if (!has_table(db_path, "runs")) return out;
  const auto result = results::query_readonly(
      db_path,
      "SELECT r.run_id, r.config_toml FROM runs r JOIN study_trials t ON t.run_id = r.run_id "
      "JOIN study_cells c ON c.cell_id = t.cell_id" +
          filter.clause,
      filter.params);
  for (const auto& row : result.rows) {
    if (row[0] && row[1] && !row[1]->empty()) out[*row[0]] = *row[1];
  }
  return out;
}

}  // namespace

bool has_study(const std::string& db_path, const std::optional<std::string>& sweep_id) {
  if (!has_table(db_path, "study_cells")) return false;
  const CellFilter filter = cell_filter(sweep_id);
  const auto result = results::query_readonly(
      db_path, "SELECT count(*) FROM study_cells c" + filter.clause, filter.params);
  return integer(result.rows.at(0)[0]) > 0;
}

StudyRecords read_study_records(const std::string& db_path,
                                const std::optional<std::string>& sweep_id) {
  const CellFilter filter = cell_filter(sweep_id);
  StudyRecords out;
  out.cells = read_cells(db_path, filter);
  out.trials = read_trials(db_path, filter);
  out.b_simple = read_b_simple(db_path, filter);
  out.ladders = read_ladders(db_path, out.cells);
  out.run_configs = read_run_configs(db_path, filter);
  return out;
}

}  // namespace batchlab::analysis
