#include "serve/api_runs.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>
#include <set>

#include "analysis/run_records.h"
#include "serve/errors.h"
#include "serve/json_column.h"
#include "serve/request_params.h"

namespace batchlab::serve {

namespace {

using nlohmann::json;

// Read by kRunsSql in this order; config_toml follows them.
const std::vector<std::string> kRunColumns = {
    "run_id",     "sweep_id",     "status",        "model",           "dataset",
    "optimizer",  "global_batch", "micro_batch",   "accum_steps",     "world_size",
    "base_lr",    "peak_lr",      "scaling",       "warmup_steps",    "seed",
    "attempts",   "error",        "total_steps",   "last_step",       "train_s",
    "started_at", "finished_at",  "scheduler_job", "has_layer_stats", "has_noise_scale"};

const char* const kRunsSql =
    "SELECT run_id, sweep_id, status, model, dataset, optimizer, global_batch, micro_batch, "
    "accum_steps, world_size, base_lr, peak_lr, scaling, warmup_steps, seed, attempts, error, "
    "total_steps, last_step, train_s, started_at, finished_at, scheduler_job, "
    // One primary-key seek each: which views have data for the run.
    "EXISTS(SELECT 1 FROM layer_stats l WHERE l.run_id = runs.run_id), "
    "EXISTS(SELECT 1 FROM noise_scale n WHERE n.run_id = runs.run_id), config_toml "
    "FROM runs WHERE ?1 IS NULL OR sweep_id = ?1 ORDER BY started_at, run_id";

// Read by kFinalSql in this order, after the run id.
const std::vector<std::string> kFinalColumns = {
    "final_train_loss", "final_train_acc", "final_val_loss", "final_val_acc",
    "final_test_loss",  "final_test_acc",  "final_gap_acc",  "final_gap_loss"};

// The last evaluation of each run (of the sweep): the (run_id, step) primary key finds it.
const char* const kFinalSql =
    "SELECT e.run_id, e.train_loss, e.train_acc, e.val_loss, e.val_acc, e.test_loss, e.test_acc, "
    "e.gap_acc, e.gap_loss FROM evals e JOIN (SELECT l.run_id, max(l.step) AS step FROM evals l "
    "JOIN runs r ON r.run_id = l.run_id WHERE ?1 IS NULL OR r.sweep_id = ?1 GROUP BY l.run_id) "
    "last ON e.run_id = last.run_id AND e.step = last.step";

const std::vector<std::string> kOps = {"eq", "ne", "lt", "le", "gt", "ge", "contains"};

// The served columns that hold numbers; a filter on one of them compares numbers.
const std::set<std::string> kNumericColumns = {
    "global_batch",    "micro_batch",     "accum_steps",      "world_size",
    "base_lr",         "peak_lr",         "warmup_steps",     "seed",
    "attempts",        "total_steps",     "last_step",        "train_s",
    "has_layer_stats", "has_noise_scale", "final_train_loss", "final_train_acc",
    "final_val_loss",  "final_val_acc",   "final_test_loss",  "final_test_acc",
    "final_gap_acc",   "final_gap_loss"};

// A finite number written as one, strictly: the whole text, no spaces, no hex, no inf or nan, in
// double's range ("1e309" is not a number here, nor is "0x80" or " 128").
std::optional<double> strict_number(const std::string& text) {
  double value = 0.0;
  const char* begin = text.data();
  const char* end = begin + text.size();
  const auto [ptr, ec] = std::from_chars(begin, end, value, std::chars_format::general);
  if (begin == end || ec != std::errc() || ptr != end || !std::isfinite(value)) return std::nullopt;
  return value;
}

struct RunRow {
  json object;  // the served columns, then the requested config keys
  std::map<std::string, std::string> config;
};

// A row's value of a key as text and, when it reads as one, as a number.
struct KeyValue {
  std::optional<std::string> text;
  std::optional<double> number;
};

KeyValue value_of(const RunRow& row, const std::string& key) {
  KeyValue v;
  if (const auto it = row.object.find(key); it != row.object.end() && !it->is_null()) {
    if (it->is_number()) {
      v.number = it->get<double>();
      v.text = it->dump();
    } else {
      v.text = it->get<std::string>();
    }
    return v;
  }
  if (const auto it = row.config.find(key); it != row.config.end()) {
    v.text = it->second;
    v.number = strict_number(it->second);
  }
  return v;
}

struct Filter {
  std::string key, op, value;
  std::optional<double> number;  // the value, parsed, when the key holds numbers
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool passes(const RunRow& row, const Filter& f) {
  const KeyValue v = value_of(row, f.key);
  if (f.op == "contains") return v.text && lower(*v.text).find(lower(f.value)) != std::string::npos;
  int cmp = 0;
  if (f.number) {
    // A numeric key compares numbers only; a run without a number there differs from every value.
    if (!v.number) return f.op == "ne";
    cmp = *v.number < *f.number ? -1 : (*v.number > *f.number ? 1 : 0);
  } else if (v.text) {
    cmp = v.text->compare(f.value);
    cmp = cmp < 0 ? -1 : (cmp > 0 ? 1 : 0);
  } else {
    return f.op == "ne";  // a run without the key differs from every value
  }
  if (f.op == "eq") return cmp == 0;
  if (f.op == "ne") return cmp != 0;
  if (f.op == "lt") return cmp < 0;
  if (f.op == "le") return cmp <= 0;
  if (f.op == "gt") return cmp > 0;
  return cmp >= 0;  // ge
}

std::vector<RunRow> read_rows(results::Connection& db, const std::optional<std::string>& sweep) {
  std::vector<RunRow> rows;
  std::map<std::string, std::size_t> by_id;
  results::Statement runs(db, kRunsSql);
  runs.bind_text(1, sweep);
  const int config_index = static_cast<int>(kRunColumns.size());
  while (runs.step()) {
    RunRow row;
    row.object = json::object();
    for (std::size_t i = 0; i < kRunColumns.size(); ++i) {
      row.object[kRunColumns[i]] = column_json(runs, static_cast<int>(i));
    }
    for (const auto& name : kFinalColumns) row.object[name] = json();
    if (const auto toml = runs.column_opt_text(config_index)) {
      row.config = analysis::flatten_toml(*toml);
    }
    by_id[row.object["run_id"].get<std::string>()] = rows.size();
    rows.push_back(std::move(row));
  }
  results::Statement finals(db, kFinalSql);
  finals.bind_text(1, sweep);
  while (finals.step()) {
    const auto it = by_id.find(finals.column_text(0));
    if (it == by_id.end()) continue;
    for (std::size_t i = 0; i < kFinalColumns.size(); ++i) {
      rows[it->second].object[kFinalColumns[i]] = column_json(finals, static_cast<int>(i) + 1);
    }
  }
  return rows;
}

// The key a request names must be served or present in some config; otherwise it is a typo.
void check_key(const std::string& param, const std::string& key,
               const std::set<std::string>& config_keys) {
  const auto& columns = served_run_columns();
  if (std::find(columns.begin(), columns.end(), key) != columns.end()) return;
  if (config_keys.count(key) != 0) return;
  throw BadRequest(param, fmt::format("parameter '{}': '{}' is neither a runs column ({}) nor a "
                                      "config key of these runs (see config_keys)",
                                      param, key.substr(0, 64), fmt::join(columns, ", ")));
}

Filter parse_filter(const std::string& text, const std::set<std::string>& config_keys,
                    const std::set<std::string>& numeric_keys) {
  const auto first = text.find(':');
  const auto second = first == std::string::npos ? first : text.find(':', first + 1);
  if (second == std::string::npos) {
    throw BadRequest("filter", fmt::format("filter '{}': expected KEY:OP:VALUE, e.g. "
                                           "optimizer:eq:lars or global_batch:ge:4096",
                                           text.substr(0, 64)));
  }
  Filter f{text.substr(0, first), text.substr(first + 1, second - first - 1),
           text.substr(second + 1), std::nullopt};
  check_key("filter", f.key, config_keys);
  if (std::find(kOps.begin(), kOps.end(), f.op) == kOps.end()) {
    throw BadRequest("filter",
                     fmt::format("filter '{}': operator '{}' is not one of {}", text.substr(0, 64),
                                 f.op.substr(0, 16), fmt::join(kOps, ", ")));
  }
  if (f.op != "contains" && numeric_keys.count(f.key) != 0) {
    f.number = strict_number(f.value);
    if (!f.number) {
      throw BadRequest("filter",
                       fmt::format("filter '{}': {} holds numbers; '{}' is not a finite number "
                                   "(write it like 512, 0.1 or 1e-3)",
                                   text.substr(0, 64), f.key, f.value.substr(0, 32)));
    }
  }
  return f;
}

void sort_rows(std::vector<RunRow>& rows, const std::string& key, bool descending) {
  std::stable_sort(rows.begin(), rows.end(), [&](const RunRow& a, const RunRow& b) {
    const KeyValue va = value_of(a, key), vb = value_of(b, key);
    if (!va.text || !vb.text) return va.text.has_value() && !vb.text;  // missing values last
    int cmp;
    if (va.number && vb.number) {
      cmp = *va.number < *vb.number ? -1 : (*va.number > *vb.number ? 1 : 0);
    } else {
      cmp = va.text->compare(*vb.text);
    }
    return descending ? cmp > 0 : cmp < 0;
  });
}

}  // namespace

const std::vector<std::string>& served_run_columns() {
  static const std::vector<std::string> columns = [] {
    std::vector<std::string> all = kRunColumns;
    all.insert(all.end(), kFinalColumns.begin(), kFinalColumns.end());
    return all;
  }();
  return columns;
}

nlohmann::json runs_endpoint(results::Connection& db, const Query& query) {
  const RequestParams params(query, {{"sweep"}, {"keys"}, {"filter", true}, {"sort"}, {"order"}});
  const auto sweep = params.identifier("sweep");
  const std::vector<std::string> keys = params.list("keys", 64);
  const std::vector<std::string> filter_texts = params.all("filter");
  if (filter_texts.size() > 32) throw BadRequest("filter", "at most 32 filters");
  const std::string order = params.choice("order", {"asc", "desc"}, "asc");

  std::vector<RunRow> rows = read_rows(db, sweep);
  std::set<std::string> config_keys;
  for (const auto& row : rows) {
    for (const auto& [k, v] : row.config) config_keys.insert(k);
  }
  for (const auto& key : keys) check_key("keys", key, config_keys);
  // A config key holds numbers when every run that has it has a number there.
  std::set<std::string> numeric_keys = kNumericColumns;
  for (const auto& key : config_keys) {
    const bool numeric = std::all_of(rows.begin(), rows.end(), [&](const RunRow& row) {
      const auto it = row.config.find(key);
      return it == row.config.end() || strict_number(it->second).has_value();
    });
    if (numeric) numeric_keys.insert(key);
  }
  std::vector<Filter> filters;
  for (const auto& text : filter_texts) {
    filters.push_back(parse_filter(text, config_keys, numeric_keys));
  }
  const std::size_t total = rows.size();
  rows.erase(std::remove_if(rows.begin(), rows.end(),
                            [&](const RunRow& row) {
                              return !std::all_of(filters.begin(), filters.end(),
                                                  [&](const Filter& f) { return passes(row, f); });
                            }),
             rows.end());
  if (const auto sort = params.text("sort")) {
    check_key("sort", *sort, config_keys);
    sort_rows(rows, *sort, order == "desc");
  }

  json out = {
      {"columns", served_run_columns()},
      {"config_keys", json(std::vector<std::string>(config_keys.begin(), config_keys.end()))},
      {"total", total},
      {"rows", json::array()}};
  for (auto& row : rows) {
    for (const auto& key : keys) {
      const auto it = row.config.find(key);
      row.object[key] = it == row.config.end() ? json() : json(it->second);
    }
    out["rows"].push_back(std::move(row.object));
  }
  return out;
}

std::map<std::string, std::string> run_labels(results::Connection& db,
                                              const std::vector<std::string>& run_ids) {
  std::map<std::string, std::string> labels;
  results::Statement s(db,
                       "SELECT optimizer, global_batch, base_lr, seed FROM runs WHERE run_id = ?1");
  for (const auto& id : run_ids) {
    s.reset();
    s.bind_text(1, id);
    if (!s.step()) throw NotFound(fmt::format("no run '{}' in this database", id));
    const auto optimizer = s.column_opt_text(0).value_or("?");
    const auto batch = s.column_opt_int64(1);
    const auto lr = s.column_opt_double(2);
    const auto seed = s.column_opt_int64(3);
    labels[id] =
        fmt::format("{} B={} lr={} seed={}", optimizer, batch ? std::to_string(*batch) : "?",
                    lr ? fmt::format("{:g}", *lr) : "?", seed ? std::to_string(*seed) : "?");
  }
  s.reset();
  return labels;
}

}  // namespace batchlab::serve
