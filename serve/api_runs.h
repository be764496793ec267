// GET /api/runs: every run of a database (or of one sweep) with the runs columns, the last
// evaluation's metrics and any resolved-config key, filtered and sorted by any of them. Filtering
// and sorting happen here, in C++, over rows read by fixed statements: no request text ever
// becomes SQL, and a key is accepted only when it is a served column or a key some run's config
// has.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "results/sqlite_util.h"

namespace batchlab::serve {

using Query = std::multimap<std::string, std::string>;

// Parameters: sweep=ID, keys=K,K (config keys added to each row), filter=KEY:OP:VALUE
// (repeatable; OP eq ne lt le gt ge contains), sort=KEY, order=asc|desc. Answers
// {"columns", "config_keys", "total", "rows"} (docs/serve.md).
nlohmann::json runs_endpoint(results::Connection& db, const Query& query);

// The runs columns the dashboard serves, in table order, then the last evaluation's metrics.
const std::vector<std::string>& served_run_columns();

// "lars B=8192 lr=4 seed=0" for each id (the curves' legend). Throws NotFound naming an id that
// is not in the database.
std::map<std::string, std::string> run_labels(results::Connection& db,
                                              const std::vector<std::string>& run_ids);

}  // namespace batchlab::serve
