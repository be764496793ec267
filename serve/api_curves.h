// GET /api/curves and GET /api/noise: time series of many runs at once, each downsampled on the
// server (serve/downsample.h) so the page gets at most `points` points per run whatever the run
// logged. The statement for each (x, y) pair is assembled only from the fixed column tables in
// api_curves.cpp: the request chooses an entry, it never supplies text.
#pragma once

#include <nlohmann/json.hpp>

#include "results/sqlite_util.h"
#include "serve/api_runs.h"
#include "serve/dashboard_db.h"

namespace batchlab::serve {

// The most runs one curves or noise request may overlay.
inline constexpr int kMaxCurveRuns = 64;

// Parameters: runs=ID,ID (required), y=METRIC, x=step|samples|wall_s|epoch, points=N.
// Answers {"x", "y", "source", "series": [{"run_id", "label", "rows", "x", "y"}]}. The runs are
// read in parallel on up to kCurveReaders pooled connections: stepping through SQLite's rows is
// nearly all of the cost (a million rows for 16 runs of 62,500 steps).
nlohmann::json curves_endpoint(DashboardDb& db, const Query& query);

// The most connections one curves answer reads on at once.
inline constexpr unsigned kCurveReaders = 4;

// Parameters: runs=ID,ID (required), points=N. Answers {"series": [{"run_id", "label", "rows",
// "step", "b_simple", "b_small", "b_big"}]}.
nlohmann::json noise_endpoint(results::Connection& db, const Query& query);

// The y metrics /api/curves accepts, steps metrics first (for the page and the error messages).
const std::vector<std::string>& curve_metrics();

}  // namespace batchlab::serve
