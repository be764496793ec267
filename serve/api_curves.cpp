#include "serve/api_curves.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <future>
#include <limits>
#include <thread>

#include "serve/downsample.h"
#include "serve/errors.h"
#include "serve/http_encoding.h"
#include "serve/request_params.h"

namespace batchlab::serve {

namespace {

using nlohmann::json;

struct Metric {
  const char* name;    // what the request says
  const char* table;   // steps or evals
  const char* column;  // the column it reads
};

// evals.train_loss is served as train_loss_eval: the eval-mode loss on a fixed training sample,
// not the running loss of the optimizer's batches that steps.train_loss holds.
const Metric kMetrics[] = {
    {"train_loss", "steps", "train_loss"}, {"lr", "steps", "lr"},
    {"grad_norm", "steps", "grad_norm"},   {"samples_per_s", "steps", "samples_per_s"},
    {"val_acc", "evals", "val_acc"},       {"val_loss", "evals", "val_loss"},
    {"test_acc", "evals", "test_acc"},     {"test_loss", "evals", "test_loss"},
    {"train_acc", "evals", "train_acc"},   {"train_loss_eval", "evals", "train_loss"},
    {"gap_acc", "evals", "gap_acc"},       {"gap_loss", "evals", "gap_loss"}};

// Every x axis is a column of both steps and evals.
const std::vector<std::string> kAxes = {"step", "samples", "wall_s", "epoch"};

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double value_or_nan(results::Statement& s, int i) {
  return s.column_is_null(i) ? kNaN : s.column_double(i);
}

// Significant digits served: a plotted curve needs far fewer than a double's 17, and the answer
// for 16 runs shrinks by about 40%. Whole numbers (steps, samples) are exact below 1e15 anyway.
constexpr int kCurveDigits = 7;

// Keeps only the picked indices of a column, NaN (a missing or non-finite value) as null.
json pick(const std::vector<double>& values, const std::vector<std::size_t>& keep) {
  json out = json::array();
  for (std::size_t i : keep) {
    const double v = values[i];
    if (std::isnan(v)) {
      out.push_back(nullptr);
    } else if (v == std::floor(v) && std::fabs(v) < 1e15) {
      out.push_back(static_cast<std::int64_t>(v));
    } else {
      out.push_back(round_significant(v, kCurveDigits));
    }
  }
  return out;
}

}  // namespace

const std::vector<std::string>& curve_metrics() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (const Metric& m : kMetrics) all.emplace_back(m.name);
    return all;
  }();
  return names;
}

nlohmann::json curves_endpoint(DashboardDb& db, const Query& query) {
  const RequestParams params(query, {{"runs"}, {"y"}, {"x"}, {"points"}});
  const auto ids = params.identifiers("runs", kMaxCurveRuns, true);
  const std::string y = params.choice("y", curve_metrics(), "train_loss");
  const std::string x = params.choice("x", kAxes, "step");
  const auto points = static_cast<std::size_t>(params.integer("points", 10, 10000, 1000));
  const Metric& metric = *std::find_if(std::begin(kMetrics), std::end(kMetrics),
                                       [&](const Metric& m) { return y == m.name; });
  const auto labels =
      db.with_connection([&](results::Connection& c) { return run_labels(c, ids); });

  // x is one of kAxes and the table and column come from kMetrics: no request text in the SQL.
  const std::string sql = fmt::format("SELECT {}, {} FROM {} WHERE run_id = ?1 ORDER BY step", x,
                                      metric.column, metric.table);
  struct Series {
    std::vector<double> xs, ys;
    std::vector<std::size_t> keep;
  };
  std::vector<Series> series(ids.size());
  const std::size_t readers = std::min<std::size_t>(
      {ids.size(), std::max(1u, std::thread::hardware_concurrency()), kCurveReaders});
  // Reader r takes runs r, r + readers, ...: runs are about equally long, so this balances.
  auto read_share = [&](std::size_t r) {
    db.with_connection([&](results::Connection& c) {
      results::Statement s(c, sql);
      for (std::size_t i = r; i < ids.size(); i += readers) {
        s.reset();
        s.bind_text(1, ids[i]);
        while (s.step()) {
          series[i].xs.push_back(value_or_nan(s, 0));
          series[i].ys.push_back(value_or_nan(s, 1));
        }
        series[i].keep = downsample_indices(series[i].ys, points);
      }
      s.reset();
    });
  };
  std::vector<std::future<void>> others;
  for (std::size_t r = 1; r < readers; ++r) {
    others.push_back(std::async(std::launch::async, read_share, r));
  }
  read_share(0);
  for (auto& f : others) f.get();  // rethrows a reader's exception

  json out = {{"x", x}, {"y", y}, {"source", metric.table}, {"series", json::array()}};
  for (std::size_t i = 0; i < ids.size(); ++i) {
    out["series"].push_back({{"run_id", ids[i]},
                             {"label", labels.at(ids[i])},
                             {"rows", series[i].xs.size()},
                             {"x", pick(series[i].xs, series[i].keep)},
                             {"y", pick(series[i].ys, series[i].keep)}});
  }
  return out;
}

nlohmann::json noise_endpoint(results::Connection& db, const Query& query) {
  const RequestParams params(query, {{"runs"}, {"points"}});
  const auto ids = params.identifiers("runs", kMaxCurveRuns, true);
  const auto points = static_cast<std::size_t>(params.integer("points", 10, 10000, 1000));
  const auto labels = run_labels(db, ids);
  results::Statement s(db,
                       "SELECT step, b_simple, b_small, b_big FROM noise_scale WHERE run_id = ?1 "
                       "ORDER BY step");
  json out = {{"series", json::array()}};
  for (const auto& id : ids) {
    std::vector<double> step, b_simple, b_small, b_big;
    s.reset();
    s.bind_text(1, id);
    while (s.step()) {
      step.push_back(value_or_nan(s, 0));
      b_simple.push_back(value_or_nan(s, 1));
      b_small.push_back(value_or_nan(s, 2));
      b_big.push_back(value_or_nan(s, 3));
    }
    const auto keep = downsample_indices(b_simple, points);
    out["series"].push_back({{"run_id", id},
                             {"label", labels.at(id)},
                             {"rows", step.size()},
                             {"step", pick(step, keep)},
                             {"b_simple", pick(b_simple, keep)},
                             {"b_small", pick(b_small, keep)},
                             {"b_big", pick(b_big, keep)}});
  }
  s.reset();
  return out;
}

}  // namespace batchlab::serve
