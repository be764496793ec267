// B_crit against the depth of the target (issue 46): the same trials' evaluations read at a ladder
// of shallower targets, each cell's steps to that target taken as the earliest crossing over its
// trials (interpolated in log-step, as the study engine interpolates the final one), and the series
// refitted at every rung with the report's fit, intervals and definitions (study_report_of). It
// shows the curve McCandlish et al. predict (the critical batch grows as the loss falls) from one
// study.
//
// The ladder: the final target and shallower ones 1%, 2%, 3.5% and 5% of it away (a loss target
// 5.8: 5.8, 5.858, 5.916, 6.003, 6.09; an accuracy target 0.88: 0.88 down to 0.836). Caveat, stated
// with the table: every cell's learning rates were searched, raced and pruned for the final target,
// so at a shallower one its best rate is the best of rates chosen for the deeper target, and a
// trial the race stopped at the winner's step never ran on; the rates a shallow target would pick
// are larger, more so at small batches, which biases the shallow rungs' steps up at small batches
// and their B_crit down a little.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/study_records.h"
#include "results/critical_batch.h"
#include "results/query_result.h"
#include "results/seed_bootstrap.h"

namespace batchlab::analysis {

inline constexpr double kTargetLadder[] = {0.0, 0.01, 0.02, 0.035, 0.05};

struct TargetRungFit {
  std::string series;
  int batches = 0;  // batch sizes fitted at this rung
  std::optional<double> s_min, b_crit;
  std::optional<results::Interval> b_crit_interval;  // 95% (3 seeds at every batch), else none
  std::optional<double> b_crit_se;  // the fit's standard error, shown where there is no interval
  std::optional<double> measured_excess;  // 20% over linear from the measured steps
  // Every definition at this rung (results/critical_batch.h), the measured 20% batch's spread
  // among them; nullopt without a fit.
  std::optional<results::CriticalBatches> definitions;
};

struct TargetRung {
  std::string metric;
  double target = 0.0;
  std::vector<TargetRungFit> fits;
};

// Per evaluation row of the study's trials: run_id -> (step, metric value), ascending step.
using TrialCurves = std::map<std::string, std::vector<std::pair<double, double>>>;

// The first step at which `curve` reaches `target` (at or below it for a loss, at or above for an
// accuracy), interpolated linearly in the metric against log step from the evaluation before;
// nullopt when it never does.
std::optional<double> crossing_step(const std::vector<std::pair<double, double>>& curve,
                                    double target, bool lower_is_better);

// The ladder from `records` and the trials' `curves`: empty when the study has several targets or
// no curves (a database without evals rows).
std::vector<TargetRung> target_ladder(const StudyRecords& records, const TrialCurves& curves);

// Reads the study's trials' evaluations of the cells' target metric (evals.<metric>).
TrialCurves read_trial_curves(const std::string& db_path, const StudyRecords& records);

// One row per rung and series: target, series, batches, S_min, B_crit, its interval, 20% measured
// ("> B" when no batch crosses) and its spread (critical_batch_format.h spread_text).
results::QueryResult target_ladder_table(const std::vector<TargetRung>& rungs);

// The table under a line saying what it is and the caveat; "" for no rungs.
std::string target_ladder_section(const std::vector<TargetRung>& rungs, results::QueryFormat format,
                                  const std::string& gap);

// [{"metric", "target", "fits": [{"series", "batches", "s_min", "b_crit", "b_crit_interval"
// ([low, high], high null when unbounded; null without one), "measured_excess",
// "measured_excess_spread" (critical_batch_format.h spread_json; null without a fit)}]}].
nlohmann::json target_ladder_json(const std::vector<TargetRung>& rungs);

}  // namespace batchlab::analysis
