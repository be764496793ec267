// The report's table of every definition of the critical batch per series (results/
// critical_batch.h): E_min / S_min, the 20%-over-linear-scaling batch from the fit and from the
// measured steps with its reference batch, and B_simple where runs measured the noise scale, each
// with its interval or range named as what it is (results/critical_batch.h Spread); and the same in
// the report's JSON ("definitions" of each fit).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analysis/study_report.h"
#include "results/query_result.h"

namespace batchlab::analysis {

// A definition's spread as the tables print it: "95% 36-41", "seed range 23-30 (2 seeds)", "run
// range 12-40 (2 runs)", "se 5 (one seed)" or "none: why", with the draws that have no value in
// range counted ("; 87 of 1000 resamples <unbounded_means>: unbounded").
std::string spread_text(const results::Spread& spread, const std::string& unbounded_means);

// "not crossing by batch 512" (a resample) or "not crossing by its own largest batch" (a seed):
// what an unbounded draw of the measured 20% batch means.
std::string measured_unbounded(const results::CriticalBatches& d);

// {"kind": "95%" | "seed range" | "run range" | "se" | "none", "low", "high" (null when
// unbounded), "se", "draws", "unbounded", "why"}, the fields that do not apply null.
nlohmann::json spread_json(const results::Spread& spread);

// One row per series with a fit.
results::QueryResult critical_batch_table(const std::vector<SeriesFit>& fits);

// The table with a header saying what each column is; "" when no series has a fit.
std::string critical_batch_section(const std::vector<SeriesFit>& fits, results::QueryFormat format,
                                   const std::string& gap);

// {"b_crit", "b_crit_interval", "excess": 0.2, "reference_batch", "largest_batch",
// "fit_excess", "fit_excess_interval", "fit_excess_spread", "measured_excess" (null: above
// largest_batch), "measured_excess_interval", "measured_excess_spread", "b_simple",
// "b_simple_runs", "b_simple_range", "b_simple_spread"}. *_interval: the 95% interval as
// [low, high] (high null when unbounded), null for any other spread; *_spread: every spread,
// {"kind": "95%" | "seed range" | "run range" | "se" | "none", "low", "high" (null when
// unbounded), "se", "draws", "unbounded" (draws with no value in range), "why" (kind "none")}.
// Null without a fit.
nlohmann::json critical_batch_json(const SeriesFit& fit);

}  // namespace batchlab::analysis
