// GET /api/sweeps, /api/milestones, /api/report and /api/study: what a sweep as a whole says. The
// overview counts runs by status and estimates progress and time left; the report and the study
// fit are exactly those of `batchlab report` (analysis/), so the page and the terminal never
// disagree.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "results/sqlite_util.h"
#include "serve/api_runs.h"

namespace batchlab::serve {

// No parameters. Answers {"sweeps": [...]} (docs/serve.md); `now_unix_s` is the clock the ETA is
// measured against (a parameter so tests can fix it).
nlohmann::json sweeps_endpoint(results::Connection& db, const Query& query, double now_unix_s);

// Parameters: sweep=ID. Answers {"rows": [...]}: every milestone with its run's setting.
nlohmann::json milestones_endpoint(results::Connection& db, const Query& query);

// Parameters: sweep=ID, group_by=K,K. The JSON of `batchlab report --format json`.
nlohmann::json report_endpoint(const std::string& db_path, const Query& query);

// Parameters: sweep=ID. {"present": false} or {"present": true, "study": <study report JSON>}.
nlohmann::json study_endpoint(const std::string& db_path, const Query& query);

}  // namespace batchlab::serve
