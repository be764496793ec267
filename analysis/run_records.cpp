#include "analysis/run_records.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "core/errors.h"
#include "results/errors.h"
#include "results/query.h"

namespace batchlab::analysis {

namespace {

const std::vector<std::string>& descriptor_columns() {
  static const std::vector<std::string> cols = {
      "model", "dataset", "optimizer", "scaling", "global_batch", "micro_batch", "world_size"};
  return cols;
}

// Runs the query and turns SQLite's rejection of the user's condition into an InputError naming it.
results::QueryResult query(const std::string& db_path, const std::string& sql,
                           const std::string& where) {
  try {
    return results::query_readonly(db_path, sql);
  } catch (const results::StoreInputError& e) {
    if (where.empty()) throw;
    throw InputError(
        fmt::format("--where \"{}\": {} (write a condition on the runs table, alias r, "
                    "e.g. \"r.optimizer = 'lars'\")",
                    where, e.what()));
  }
}

// A config value as the report shows it: strings bare, numbers in their shortest form.
std::string render(const toml::node& node) {
  if (auto s = node.value_exact<std::string>()) return *s;
  if (auto i = node.value_exact<int64_t>()) return std::to_string(*i);
  if (auto d = node.value_exact<double>()) return fmt::format("{}", *d);
  if (auto b = node.value_exact<bool>()) return *b ? "true" : "false";
  std::ostringstream out;
  if (auto* a = node.as_array()) out << *a;
  if (auto* t = node.as_table()) out << *t;
  return out.str();
}

void read_targets(const toml::table& config, RunRecord& run) {
  auto add = [&run](const toml::node& t) {
    const auto* table = t.as_table();
    if (table == nullptr) return;
    auto metric = (*table)["metric"].value<std::string>();
    auto value = (*table)["value"].value<double>();
    if (metric && value) run.declared_targets.emplace_back(*metric, *value);
  };
  const toml::node_view<const toml::node> target = config.at_path("train.target");
  if (!target) return;
  if (const auto* list = target.as_array()) {
    for (const auto& t : *list) add(t);
  } else {
    add(*target.node());
  }
}

}  // namespace

std::optional<double> to_number(const std::optional<std::string>& cell) {
  if (!cell || cell->empty()) return std::nullopt;
  try {
    size_t used = 0;
    const double v = std::stod(*cell, &used);
    if (used != cell->size()) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::vector<std::string> runs_columns(const std::string& db_path) {
  const auto result =
      results::query_readonly(db_path, "SELECT name FROM pragma_table_info('runs') ORDER BY cid");
  std::vector<std::string> names;
  for (const auto& row : result.rows) names.push_back(row[0].value_or(""));
  return names;
}

std::vector<RunRecord> read_run_records(const std::string& db_path,
                                        const std::vector<std::string>& keys,
                                        const std::string& where) {
  const auto columns = runs_columns(db_path);
  const std::set<std::string> column_set(columns.begin(), columns.end());
  std::string select = "SELECT r.run_id, r.status, r.seed, r.base_lr, r.peak_lr, r.config_toml";
  for (const auto& c : descriptor_columns()) select += ", r." + c;
  std::vector<int> key_column(keys.size(), -1);  // result column of a runs-column key
  int next = 6 + static_cast<int>(descriptor_columns().size());
  for (size_t k = 0; k < keys.size(); ++k) {
    if (keys[k].find('.') != std::string::npos) continue;  // a config key path
    if (column_set.count(keys[k]) == 0) {
      throw InputError(fmt::format(
          "--group-by {}: not a column of the runs table; use one of: {} (or a config key such as "
          "optim.weight_decay)",
          keys[k], fmt::join(columns, ", ")));
    }
    select += ", r." + keys[k];
    key_column[k] = next++;
  }
  const std::string filter = where.empty() ? "" : " WHERE (" + where + ")";
  const auto runs = query(db_path, select + " FROM runs r" + filter + " ORDER BY r.run_id", where);

  std::vector<RunRecord> out;
  std::map<std::string, size_t> index;
  std::vector<bool> key_found(keys.size(), false);
  for (const auto& row : runs.rows) {
    RunRecord run;
    run.run_id = row[0].value_or("");
    run.status = row[1].value_or("");
    if (auto s = to_number(row[2])) run.seed = static_cast<int64_t>(*s);
    run.base_lr = to_number(row[3]);
    run.peak_lr = to_number(row[4]);
    for (size_t d = 0; d < descriptor_columns().size(); ++d) {
      run.descriptors[descriptor_columns()[d]] = row[6 + d].value_or("");
    }
    toml::table config;
    bool have_config = false;
    if (row[5] && !row[5]->empty()) {
      try {
        config = toml::parse(*row[5]);
        have_config = true;
      } catch (const toml::parse_error&) {
        // A run row without a readable config still counts; its config keys read as absent.
      }
    }
    for (size_t k = 0; k < keys.size(); ++k) {
      std::string value;
      if (key_column[k] >= 0) {
        value = row[static_cast<size_t>(key_column[k])].value_or("");
      } else if (have_config) {
        if (auto node = config.at_path(keys[k]); node) {
          value = render(*node.node());
          key_found[k] = true;
        }
      }
      run.key.push_back(value);
    }
    if (have_config) read_targets(config, run);
    index[run.run_id] = out.size();
    out.push_back(std::move(run));
  }
  for (size_t k = 0; k < keys.size(); ++k) {
    if (key_column[k] < 0 && !out.empty() && !key_found[k]) {
      throw InputError(
          fmt::format("--group-by {}: no selected run's config has this key; runs columns are: {}",
                      keys[k], fmt::join(columns, ", ")));
    }
  }
  if (out.empty()) return out;

  const std::string in_runs = "(SELECT r.run_id FROM runs r" + filter + ")";
  const auto finals = query(
      db_path,
      "SELECT e.run_id, e.test_acc, e.test_loss, e.gap_acc, e.gap_loss FROM evals e JOIN "
      "(SELECT run_id, max(step) AS last FROM evals GROUP BY run_id) m ON m.run_id = e.run_id "
      "AND m.last = e.step WHERE e.run_id IN " +
          in_runs,
      where);
  for (const auto& row : finals.rows) {
    auto it = index.find(row[0].value_or(""));
    if (it == index.end()) continue;
    RunRecord& run = out[it->second];
    run.final_acc = to_number(row[1]);
    run.final_loss = to_number(row[2]);
    run.final_gap_acc = to_number(row[3]);
    run.final_gap_loss = to_number(row[4]);
  }
  const auto best =
      query(db_path,
            "SELECT run_id, max(test_acc), min(test_loss) FROM evals WHERE run_id IN " + in_runs +
                " GROUP BY run_id",
            where);
  for (const auto& row : best.rows) {
    auto it = index.find(row[0].value_or(""));
    if (it == index.end()) continue;
    out[it->second].best_acc = to_number(row[1]);
    out[it->second].best_loss = to_number(row[2]);
  }
  const auto milestones =
      query(db_path,
            "SELECT m.run_id, m.metric, m.target, m.step, m.epoch, m.samples, m.wall_s, e.gap_acc "
            "FROM milestones m LEFT JOIN evals e ON e.run_id = m.run_id AND e.step = m.step "
            "WHERE m.run_id IN " +
                in_runs + " ORDER BY m.run_id, m.metric, m.target",
            where);
  for (const auto& row : milestones.rows) {
    auto it = index.find(row[0].value_or(""));
    if (it == index.end()) continue;
    MilestoneRecord m;
    m.metric = row[1].value_or("");
    m.target = to_number(row[2]).value_or(0.0);
    m.step = to_number(row[3]);
    m.epoch = to_number(row[4]);
    m.samples = to_number(row[5]);
    m.train_s = to_number(row[6]);
    m.gap_acc = to_number(row[7]);
    out[it->second].milestones.push_back(std::move(m));
  }
  return out;
}

}  // namespace batchlab::analysis
