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

// The selected runs as SQL: the user's condition (SQL by design, like `batchlab query`) and bound
// values, never values spliced into the text.
struct Selection {
  std::string where;  // the user's part, for error messages
  std::string condition;
  std::vector<results::QueryParam> params;
  // " WHERE ..." over runs aliased r; "" for every run.
  std::string clause() const { return condition.empty() ? "" : " WHERE " + condition; }
  // A subquery of the selected run ids, for the per-run tables.
  std::string run_ids() const { return "(SELECT r.run_id FROM runs r" + clause() + ")"; }
};

Selection selection_of(const RunFilter& filter) {
  Selection s;
  s.where = filter.where;
  std::vector<std::string> parts;
  if (!filter.where.empty()) parts.push_back("(" + filter.where + ")");
  if (filter.sweep_id) {
    parts.emplace_back("r.sweep_id = ?");
    s.params.emplace_back(*filter.sweep_id);
  }
  s.condition = fmt::format("{}", fmt::join(parts, " AND "));
  return s;
}

// Runs the query and turns SQLite's rejection of the user's condition into an InputError naming it.
results::QueryResult query(const std::string& db_path, const std::string& sql,
                           const Selection& selection) {
  try {
    return results::query_readonly(db_path, sql, selection.params);
  } catch (const results::StoreInputError& e) {
    if (selection.where.empty()) throw;
    throw InputError(
        fmt::format("--where \"{}\": {} (write a condition on the runs table, alias r, "
                    "e.g. \"r.optimizer = 'lars'\")",
                    selection.where, e.what()));
  }
}

// `column` of `alias` when the table has it (older schemas lack newer columns), else NULL.
std::string column_or_null(const std::set<std::string>& columns, const std::string& alias,
                           const std::string& column) {
  return columns.count(column) ? alias + "." + column : "NULL";
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
    if (metric && value) run.declared_targets.push_back({*metric, *value});
  };
  const toml::node_view<const toml::node> target = config.at_path("train.target");
  if (!target) return;
  if (const auto* list = target.as_array()) {
    for (const auto& t : *list) add(t);
  } else {
    add(*target.node());
  }
}

// Where each requested key comes from: a result column (a runs column) or the stored config.
struct KeyColumns {
  std::vector<int> column;  // result column of a runs-column key; -1 for a config key path
  std::string select;       // ", r.k1, r.k2" for the runs-column keys
};

KeyColumns key_columns(const std::vector<std::string>& keys,
                       const std::vector<std::string>& columns, int first) {
  const std::set<std::string> column_set(columns.begin(), columns.end());
  KeyColumns out;
  out.column.assign(keys.size(), -1);
  for (size_t k = 0; k < keys.size(); ++k) {
    if (keys[k].find('.') != std::string::npos) continue;  // a config key path
    if (column_set.count(keys[k]) == 0) {
      throw InputError(fmt::format(
          "--group-by {}: not a column of the runs table; use one of: {} (or a config key such as "
          "optim.weight_decay)",
          keys[k], fmt::join(columns, ", ")));
    }
    out.select += ", r." + keys[k];  // a column name checked against the schema above
    out.column[k] = first++;
  }
  return out;
}

// The runs rows: identity, status, descriptors and the group-by values.
std::vector<RunRecord> read_runs(const std::string& db_path, const std::vector<std::string>& keys,
                                 const Selection& selection) {
  const auto columns = table_columns(db_path, "runs");
  // An SQLite file without a runs table is some other program's: say so, rather than that a
  // --group-by key is not one of its (no) columns.
  if (columns.empty()) {
    throw results::StoreInputError(
        db_path,
        "not a batchlab database (it has no runs table); pass the file a sweep writes (the "
        "[sweep] results key, e.g. results/quickstart.db) or the --db of `batchlab train`");
  }
  const std::set<std::string> column_set(columns.begin(), columns.end());
  std::string select = "SELECT r.run_id, r.status, r.seed, r.base_lr, r.peak_lr, r.config_toml, " +
                       column_or_null(column_set, "r", "train_s") + ", " +
                       column_or_null(column_set, "r", "chance_acc");
  for (const auto& c : descriptor_columns()) select += ", r." + c;
  constexpr size_t kDescriptors = 8;  // first result column of the descriptors
  const KeyColumns key_cols =
      key_columns(keys, columns, static_cast<int>(kDescriptors + descriptor_columns().size()));
  const auto runs =
      query(db_path,
            select + key_cols.select + " FROM runs r" + selection.clause() + " ORDER BY r.run_id",
            selection);

  std::vector<RunRecord> out;
  std::vector<bool> key_found(keys.size(), false);
  for (const auto& row : runs.rows) {
    RunRecord run;
    run.run_id = row[0].value_or("");
    run.status = row[1].value_or("");
    if (auto s = to_number(row[2])) run.seed = static_cast<int64_t>(*s);
    run.base_lr = to_number(row[3]);
    run.peak_lr = to_number(row[4]);
    run.train_s = to_number(row[6]);
    run.chance_acc = to_number(row[7]);
    for (size_t d = 0; d < descriptor_columns().size(); ++d) {
      run.descriptors[descriptor_columns()[d]] = row[kDescriptors + d].value_or("");
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
      if (key_cols.column[k] >= 0) {
        value = row[static_cast<size_t>(key_cols.column[k])].value_or("");
      } else if (have_config) {
        if (auto node = config.at_path(keys[k]); node) {
          value = render(*node.node());
          key_found[k] = true;
        }
      }
      run.key.push_back(value);
    }
    if (have_config) read_targets(config, run);
    out.push_back(std::move(run));
  }
  for (size_t k = 0; k < keys.size(); ++k) {
    if (key_cols.column[k] < 0 && !out.empty() && !key_found[k]) {
      throw InputError(
          fmt::format("--group-by {}: no selected run's config has this key; runs columns are: {}",
                      keys[k], fmt::join(columns, ", ")));
    }
  }
  return out;
}

using RunIndex = std::map<std::string, RunRecord*>;

// Calls fill(run, row) for every result row whose first column is a selected run.
template <typename Fill>
void for_each_run_row(const results::QueryResult& result, const RunIndex& index, Fill fill) {
  for (const auto& row : result.rows) {
    auto it = index.find(row[0].value_or(""));
    if (it != index.end()) fill(*it->second, row);
  }
}

void read_finals(const std::string& db_path, const Selection& selection, const RunIndex& index) {
  const auto finals = query(
      db_path,
      "SELECT e.run_id, e.test_acc, e.test_loss, e.gap_acc, e.gap_loss FROM evals e JOIN "
      "(SELECT run_id, max(step) AS last FROM evals GROUP BY run_id) m ON m.run_id = e.run_id "
      "AND m.last = e.step WHERE e.run_id IN " +
          selection.run_ids(),
      selection);
  for_each_run_row(finals, index, [](RunRecord& run, const auto& row) {
    run.final_acc = to_number(row[1]);
    run.final_loss = to_number(row[2]);
    run.final_gap_acc = to_number(row[3]);
    run.final_gap_loss = to_number(row[4]);
  });
  const auto best =
      query(db_path,
            "SELECT run_id, max(test_acc), min(test_loss) FROM evals WHERE run_id IN " +
                selection.run_ids() + " GROUP BY run_id",
            selection);
  for_each_run_row(best, index, [](RunRecord& run, const auto& row) {
    run.best_acc = to_number(row[1]);
    run.best_loss = to_number(row[2]);
  });
}

// The last evaluation that measured the validation split (schema v3; absent before).
void read_validation(const std::string& db_path, const Selection& selection,
                     const RunIndex& index) {
  const auto columns = table_columns(db_path, "evals");
  if (std::count(columns.begin(), columns.end(), "val_acc") == 0) return;
  const auto finals =
      query(db_path,
            "SELECT e.run_id, e.val_acc, e.val_loss FROM evals e JOIN "
            "(SELECT run_id, max(step) AS last FROM evals WHERE val_acc IS NOT NULL "
            "OR val_loss IS NOT NULL GROUP BY run_id) m ON m.run_id = e.run_id AND "
            "m.last = e.step WHERE e.run_id IN " +
                selection.run_ids(),
            selection);
  for_each_run_row(finals, index, [](RunRecord& run, const auto& row) {
    run.final_val_acc = to_number(row[1]);
    run.final_val_loss = to_number(row[2]);
  });
}

void read_milestones(const std::string& db_path, const Selection& selection,
                     const RunIndex& index) {
  const auto milestones =
      query(db_path,
            "SELECT m.run_id, m.metric, m.target, m.step, m.epoch, m.samples, m.wall_s, e.gap_acc "
            "FROM milestones m LEFT JOIN evals e ON e.run_id = m.run_id AND e.step = m.step "
            "WHERE m.run_id IN " +
                selection.run_ids() + " ORDER BY m.run_id, m.metric, m.target",
            selection);
  for_each_run_row(milestones, index, [](RunRecord& run, const auto& row) {
    MilestoneRecord m;
    m.metric = row[1].value_or("");
    m.target = to_number(row[2]).value_or(0.0);
    m.step = to_number(row[3]);
    m.epoch = to_number(row[4]);
    m.samples = to_number(row[5]);
    m.train_s = to_number(row[6]);
    m.gap_acc = to_number(row[7]);
    run.milestones.push_back(std::move(m));
  });
}

void flatten_into(const toml::table& table, const std::string& prefix,
                  std::map<std::string, std::string>& out) {
  for (const auto& [key, node] : table) {
    const std::string path = prefix + std::string(key.str());
    if (const auto* sub = node.as_table()) {
      flatten_into(*sub, path + ".", out);
    } else {
      out[path] = render(node);
    }
  }
}

}  // namespace

std::map<std::string, std::string> flatten_toml(const std::string& text) {
  std::map<std::string, std::string> out;
  try {
    flatten_into(toml::parse(text), "", out);
  } catch (const toml::parse_error&) {
    out.clear();
  }
  return out;
}

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

std::vector<std::string> table_columns(const std::string& db_path, const std::string& table) {
  const auto result = results::query_readonly(
      db_path, "SELECT name FROM pragma_table_info(?) ORDER BY cid", {table});
  std::vector<std::string> names;
  for (const auto& row : result.rows) names.push_back(row[0].value_or(""));
  return names;
}

std::vector<RunRecord> read_run_records(const std::string& db_path,
                                        const std::vector<std::string>& keys,
                                        const RunFilter& filter) {
  const Selection selection = selection_of(filter);
  auto out = read_runs(db_path, keys, selection);
  if (out.empty()) return out;
  RunIndex index;
  for (auto& run : out) index[run.run_id] = &run;
  read_finals(db_path, selection, index);
  read_validation(db_path, selection, index);
  read_milestones(db_path, selection, index);
  return out;
}

}  // namespace batchlab::analysis
