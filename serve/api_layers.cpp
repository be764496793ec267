#include "serve/api_layers.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "serve/errors.h"
#include "serve/http_encoding.h"
#include "serve/request_params.h"

namespace batchlab::serve {

namespace {

using nlohmann::json;

const std::vector<std::string> kLayerMetrics = {"ratio", "trust_ratio", "weight_norm", "grad_norm",
                                                "update_norm"};

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// The recorded steps to draw: all of them, or `limit` evenly spaced ones (first and last kept).
std::vector<std::int64_t> pick_steps(const std::vector<std::int64_t>& steps, std::size_t limit) {
  if (steps.size() <= limit) return steps;
  std::vector<std::int64_t> picked;
  picked.reserve(limit);
  for (std::size_t i = 0; i < limit; ++i) {
    picked.push_back(steps[i * (steps.size() - 1) / (limit - 1)]);
  }
  picked.erase(std::unique(picked.begin(), picked.end()), picked.end());
  return picked;
}

}  // namespace

bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (is_digit(a[i]) && is_digit(b[j])) {
      std::size_t ie = i, je = j;
      while (ie < a.size() && is_digit(a[ie])) ++ie;
      while (je < b.size() && is_digit(b[je])) ++je;
      // Without leading zeros the longer run is the larger number.
      std::size_t is = i, js = j;
      while (is + 1 < ie && a[is] == '0') ++is;
      while (js + 1 < je && b[js] == '0') ++js;
      if (ie - is != je - js) return ie - is < je - js;
      const int cmp = a.compare(is, ie - is, b, js, je - js);
      if (cmp != 0) return cmp < 0;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

nlohmann::json layers_endpoint(results::Connection& db, const Query& query) {
  const RequestParams params(query, {{"run"}, {"metric"}, {"steps"}});
  const auto run = params.identifier("run");
  if (!run) throw BadRequest("run", "parameter 'run' is required: run=ID");
  const std::string metric = params.choice("metric", kLayerMetrics, "ratio");
  const auto limit = static_cast<std::size_t>(params.integer("steps", 10, 4000, 400));
  run_labels(db, {*run});  // NotFound for an unknown run

  // The recorded steps: each lookup seeks the (run_id, step, layer) primary key to the next step,
  // so this costs one seek per recorded step instead of a pass over every layer's row.
  std::vector<std::int64_t> steps;
  {
    results::Statement next(db,
                            "SELECT min(step) FROM layer_stats WHERE run_id = ?1 AND step > ?2");
    std::int64_t after = std::numeric_limits<std::int64_t>::min();
    for (;;) {
      next.reset();
      next.bind_text(1, *run);
      next.bind_int64(2, after);
      if (!next.step() || next.column_is_null(0)) break;
      after = next.column_int64(0);
      steps.push_back(after);
    }
    next.reset();
  }
  const std::vector<std::int64_t> picked = pick_steps(steps, limit);

  // metric is an entry of kLayerMetrics: no request text in the SQL.
  results::Statement rows(db, fmt::format("SELECT layer, {} FROM layer_stats WHERE run_id = ?1 "
                                          "AND step = ?2",
                                          metric));
  std::unordered_map<std::string, std::size_t> layer_index;
  std::vector<std::string> layers;
  std::vector<std::vector<double>> columns;  // [step][layer index in order of first sight]
  columns.reserve(picked.size());
  for (const std::int64_t step : picked) {
    rows.reset();
    rows.bind_text(1, *run);
    rows.bind_int64(2, step);
    std::vector<double>& column =
        columns.emplace_back(layers.size(), std::numeric_limits<double>::quiet_NaN());
    while (rows.step()) {
      std::string name = rows.column_text(0);
      auto [it, added] = layer_index.try_emplace(std::move(name), layers.size());
      if (added) {
        layers.push_back(it->first);
        column.resize(layers.size(), std::numeric_limits<double>::quiet_NaN());
      }
      column[it->second] =
          rows.column_is_null(1) ? std::numeric_limits<double>::quiet_NaN() : rows.column_double(1);
    }
  }
  rows.reset();

  std::vector<std::size_t> order(layers.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return natural_less(layers[a], layers[b]); });
  json out = {{"run_id", *run},
              {"metric", metric},
              {"steps", picked},
              {"layers", json::array()},
              {"values", json::array()}};
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const std::size_t li : order) {
    out["layers"].push_back(layers[li]);
    json row = json::array();
    for (const auto& column : columns) {
      const double v = li < column.size() ? column[li] : std::numeric_limits<double>::quiet_NaN();
      if (std::isfinite(v)) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
        // Four digits: more than a color scale or a tooltip shows, a third of the bytes.
        row.push_back(round_significant(v, 4));
      } else {
        row.push_back(nullptr);
      }
    }
    out["values"].push_back(std::move(row));
  }
  out["min"] = std::isfinite(lo) ? json(lo) : json();
  out["max"] = std::isfinite(hi) ? json(hi) : json();
  return out;
}

}  // namespace batchlab::serve
