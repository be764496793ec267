#include "analysis/study_progress.h"

#include <filesystem>

#include "analysis/run_records.h"
#include "results/query.h"

namespace batchlab::analysis {

namespace {

std::optional<int64_t> as_int64(const std::optional<std::string>& cell) {
  if (auto v = to_number(cell)) return static_cast<int64_t>(*v);
  return std::nullopt;
}

void read_outcomes(const std::string& db, const std::string& sweep_id, StudyProgress& out) {
  const auto r = results::query_readonly(
      db,
      "SELECT t.outcome, count(*) FROM study_trials t JOIN study_cells c ON c.cell_id = t.cell_id "
      "WHERE c.sweep_id = ?1 GROUP BY t.outcome",
      {sweep_id});
  for (const auto& row : r.rows)
    out.trial_outcomes[row[0].value_or("?")] = as_int64(row[1]).value_or(0);
}

void read_undecided(const std::string& db, const std::string& sweep_id, StudyProgress& out) {
  const auto r = results::query_readonly(
      db,
      "SELECT t.run_id, t.base_lr, r.status, r.last_step, r.total_steps FROM study_trials t "
      "JOIN study_cells c ON c.cell_id = t.cell_id LEFT JOIN runs r ON r.run_id = t.run_id "
      "WHERE c.sweep_id = ?1 AND t.outcome = 'running' ORDER BY t.cell_id, t.lr_index",
      {sweep_id});
  for (const auto& row : r.rows) {
    out.undecided.push_back({row[0].value_or("?"), to_number(row[1]).value_or(0.0), row[2],
                             as_int64(row[3]), as_int64(row[4])});
  }
}

void read_cells(const std::string& db, const std::string& sweep_id, StudyProgress& out) {
  const auto r = results::query_readonly(
      db,
      "SELECT optimizer, global_batch, seed, status, best_lr, steps_to_target, cap_steps, "
      "(SELECT count(*) FROM study_trials t WHERE t.cell_id = c.cell_id), cell_id "
      "FROM study_cells c "
      "WHERE sweep_id = ?1 ORDER BY optimizer, global_batch, seed",
      {sweep_id});
  for (const auto& row : r.rows) {
    StudyCellProgress c;
    c.optimizer = row[0].value_or("");
    c.global_batch = as_int64(row[1]).value_or(0);
    c.seed = as_int64(row[2]).value_or(0);
    c.status = row[3].value_or("");
    c.best_lr = to_number(row[4]);
    c.steps_to_target = to_number(row[5]);
    c.cap_steps = as_int64(row[6]).value_or(0);
    c.trials = as_int64(row[7]).value_or(0);
    c.cell_id = row[8].value_or("");
    out.cell_status[c.cell_id] = c.status;
    out.cells.push_back(std::move(c));
  }
}

}  // namespace

StudyProgress read_study_progress(const std::string& db_path, const std::string& sweep_id) {
  StudyProgress out;
  std::error_code ec;
  if (!std::filesystem::exists(db_path, ec)) return out;
  read_outcomes(db_path, sweep_id, out);
  read_undecided(db_path, sweep_id, out);
  read_cells(db_path, sweep_id, out);
  return out;
}

}  // namespace batchlab::analysis
