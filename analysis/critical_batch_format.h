// The report's table of every definition of the critical batch per series (results/
// critical_batch.h): E_min / S_min, the 20%-over-linear-scaling batch from the fit and from the
// measured steps with its reference batch, and B_simple where runs measured the noise scale, each
// with its interval; and the same in the report's JSON ("definitions" of each fit).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analysis/study_report.h"
#include "results/query_result.h"

namespace batchlab::analysis {

// One row per series with a fit.
results::QueryResult critical_batch_table(const std::vector<SeriesFit>& fits);

// The table with a header saying what each column is; "" when no series has a fit.
std::string critical_batch_section(const std::vector<SeriesFit>& fits, results::QueryFormat format,
                                   const std::string& gap);

// {"b_crit", "b_crit_interval", "excess": 0.2, "reference_batch", "largest_batch",
// "fit_excess", "fit_excess_interval", "measured_excess" (null: above largest_batch),
// "measured_excess_interval", "b_simple", "b_simple_runs", "b_simple_range"}; intervals
// [low, high] with high null when unbounded, null without one. Null without a fit.
nlohmann::json critical_batch_json(const SeriesFit& fit);

}  // namespace batchlab::analysis
