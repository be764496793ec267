#include "analysis/model_card.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "results/query.h"

namespace batchlab::analysis {
namespace {

// Ordered: the card lists its keys in the order written, for a reader opening the file.
using nlohmann::ordered_json;
using results::ValueType;

// One cell as JSON: numbers as numbers, NULL (and a non-finite real) as null.
ordered_json cell_json(const std::optional<std::string>& cell, ValueType type) {
  if (!cell || type == ValueType::kNull) return nullptr;
  if (type == ValueType::kInteger) return std::stoll(*cell);
  if (type == ValueType::kReal) {
    const double v = std::stod(*cell);
    return std::isfinite(v) ? ordered_json(v) : ordered_json(nullptr);
  }
  return *cell;
}

// Each row as an object of its columns (run_id left out: the card names the run once).
std::vector<ordered_json> rows_json(const results::QueryResult& r) {
  std::vector<ordered_json> out;
  for (size_t i = 0; i < r.rows.size(); ++i) {
    ordered_json row = ordered_json::object();
    for (size_t c = 0; c < r.columns.size(); ++c) {
      if (r.columns[c] != "run_id") row[r.columns[c]] = cell_json(r.rows[i][c], r.types[i][c]);
    }
    out.push_back(std::move(row));
  }
  return out;
}

ordered_json first_row_or_null(const results::QueryResult& r) {
  auto rows = rows_json(r);
  return rows.empty() ? ordered_json(nullptr) : rows.front();
}

ordered_json metrics_json(const std::string& db, const std::string& run_id, int64_t step) {
  const std::vector<results::QueryParam> id = {run_id};
  ordered_json metrics;
  metrics["final_eval"] = first_row_or_null(results::query_readonly(
      db, "SELECT * FROM evals WHERE run_id = ? ORDER BY step DESC LIMIT 1", id));
  metrics["checkpoint_eval"] = first_row_or_null(results::query_readonly(
      db, "SELECT * FROM evals WHERE run_id = ? AND step = ?", {run_id, step}));
  metrics["milestones"] = rows_json(results::query_readonly(
      db, "SELECT * FROM milestones WHERE run_id = ? ORDER BY step, metric", id));
  return metrics;
}

}  // namespace

RunToExport read_run_to_export(const std::string& db_path, const std::string& run_id) {
  const auto found =
      results::query_readonly(db_path,
                              "SELECT r.status, r.config_toml, coalesce(s.name, '') FROM runs r "
                              "LEFT JOIN sweeps s ON s.sweep_id = r.sweep_id WHERE r.run_id = ?",
                              {run_id});
  if (found.rows.empty()) {
    const auto count = results::query_readonly(db_path, "SELECT count(*) FROM runs");
    throw InputError(fmt::format(
        "--run {}: no such run in {} ({} runs); list them with batchlab query --db {} \"SELECT "
        "run_id, status, model FROM runs\"",
        run_id, db_path, count.rows.front().front().value_or("0"), db_path));
  }
  const auto& row = found.rows.front();
  if (!row[1] || row[1]->empty()) {
    throw InputError(fmt::format("run {} in {} has no recorded configuration (runs.config_toml)",
                                 run_id, db_path));
  }
  return {run_id, row[0].value_or(""), *row[1], row[2].value_or("")};
}

std::string model_card_json(const std::string& db_path, const RunToExport& run,
                            const ExportedWeightsInfo& weights) {
  ordered_json card;
  card["run"] = first_row_or_null(results::query_readonly(
      db_path,
      "SELECT run_id, status, model, dataset, optimizer, global_batch, seed, peak_lr, host, "
      "device, git_sha, torch_version, started_at, finished_at, error FROM runs WHERE run_id = ?",
      {run.run_id}));
  card["run"]["run_id"] = run.run_id;
  card["run"]["sweep"] =
      run.sweep_name.empty() ? ordered_json(nullptr) : ordered_json(run.sweep_name);
  ordered_json checkpoint = {
      {"which", weights.checkpoint}, {"file", weights.checkpoint_file}, {"step", weights.step}};
  if (weights.best_metric) {
    checkpoint["best_metric"] = *weights.best_metric;
    checkpoint["best_value"] =
        weights.best_value ? ordered_json(*weights.best_value) : ordered_json(nullptr);
  }
  card["checkpoint"] = checkpoint;
  // What a strict load needs: the module as the weights' shapes say it is (a ResNet with the small
  // stem is not torchvision's resnet as is), or no promise where no library builds one.
  card["weights"] = {
      {"file", weights.weights_file},
      {"names", weights.names},
      {"tensors", weights.tensors},
      {"format", weights.module_promised
                     ? "torch.save state_dict: torch.load(f), then load_state_dict(strict=True) "
                       "into the module below"
                     : "torch.save state_dict: torch.load(f); no PyTorch module is promised to "
                       "take it with load_state_dict(strict=True) (see module)"},
      {"module", weights.module},
      {"python", weights.module_python.empty() ? ordered_json(nullptr)
                                               : ordered_json(weights.module_python)}};
  card["metrics"] = metrics_json(db_path, run.run_id, weights.step);
  card["config_toml"] = run.config_toml;
  return card.dump(2) + "\n";
}

void write_model_card(const std::string& path, const std::string& json) {
  write_file_atomically(path, json);
}

std::string model_card_path(const std::string& weights_path) {
  std::filesystem::path card(weights_path);
  card.replace_extension(".json");
  if (card == std::filesystem::path(weights_path)) {
    throw InputError(fmt::format(
        "--out {}: the card model.json goes beside the weights under the same name with .json; "
        "give the weights another extension (e.g. .pt)",
        weights_path));
  }
  return card.string();
}

}  // namespace batchlab::analysis
