// `batchlab report` on a scaling study (issue 13): per cell the best LR, steps and samples to the
// target (the crossing interpolated in log-step), the status (reached / censored / searching), the
// basin width and the seed range; per fit series (an optimizer, split further by any other non-LR,
// non-batch axis that varies) the fit of S(B) = S_min + E_min / B (results/scaling_fit.h) on one
// point per batch size, the geometric mean over its seeds, with a 95% interval from a bootstrap
// over the seeds (results/seed_bootstrap.h) when every batch ran 3 or more, else the range of
// per-seed fits (results/seed_range.h), beside the run-averaged gradient noise scale B_simple of
// the same trials; and the study's cost in samples. Computed from the study_cells, study_trials and
// noise_scale rows alone (study_records.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/run_equivalents.h"
#include "analysis/series_settings.h"
#include "analysis/study_audit.h"
#include "analysis/study_ladder.h"
#include "analysis/study_records.h"
#include "analysis/target_ladder.h"
#include "results/critical_batch.h"
#include "results/lack_of_fit.h"
#include "results/query_result.h"
#include "results/scaling_fit.h"
#include "results/seed_bootstrap.h"
#include "results/seed_range.h"

namespace batchlab::analysis {

// An LR point is in a cell's basin when its steps to target are within this factor of the best.
inline constexpr double kBasinFactor = 1.25;

struct StudyReportOptions {
  std::optional<std::string> sweep_id;  // only this sweep's cells, when set
  // B_crit at the ladder of shallower targets (analysis/target_ladder.h): five more fits, read
  // from the evals table; compare leaves it out.
  bool target_ladder = true;
};

struct StudyCellSummary {
  StudyCellRecord cell;
  // The cell's non-LR axes other than the optimizer, the batch and the seed ("k=v, ..."), from
  // cell_toml; "" when it has none.
  std::string setting;
  std::string varying;  // the part of `setting` whose keys vary among its optimizer's cells
  std::string series;   // the fit this cell belongs to (fits[].series)
  int lr_points = 0;    // trials run in the cell
  int basin_width = 0;  // reached trials with steps <= kBasinFactor x the cell's best
  // The cells of the same setting and batch that differ only in the seed, this one included.
  int seeds = 1;
  std::optional<double> seed_min,
      seed_max;  // their steps to target (reached cells), when seeds > 1
  std::vector<StudyTrialRecord> trials;
  // The pruned learning-rate points next to an interior best (study_audit.h): its best rate is
  // interior only because of them.
  std::vector<int64_t> pruned_neighbours;
};

// The seeds of one batch size of a series.
struct BatchSeeds {
  int64_t batch = 0;
  int seeds = 0;    // distinct seeds among the series' cells at this batch, searching ones included
  int reached = 0;  // of them, the seeds with a reached cell
  int searching = 0;  // of them, the seeds with a cell still searching
};

struct SeriesFit {
  std::string series;  // the optimizer, then "k=v" of the axes that vary among its cells
  std::string optimizer;
  // One point per batch size: the geometric mean of its seeds' steps when every decided seed
  // reached; a batch with a censored seed is a censored point ("batch 4096 (1 of 2 seeds
  // reached)"). nullopt: fewer than 2 batch sizes reached.
  std::optional<results::ScalingFit> fit;
  std::vector<std::string> searching;   // cells still searching, left out of the fit
  std::vector<BatchSeeds> batch_seeds;  // ascending batch
  // The per-seed steps the fit and its interval are computed from: the reached cells of the batch
  // sizes that are points of the fit (no censored seed, none searching).
  std::vector<results::SeedSteps> fitted_cells;
  // The 95% interval: the bootstrap over the seeds of the fitted batches, resampled within each
  // batch; nullopt without a fit or while a fitted batch has fewer than 3 seeds
  // (results::kMinSeedsForInterval).
  std::optional<results::SeedBootstrap> bootstrap;
  // In its place, when there is a fit but no interval: the range of per-seed fits (nullopt with
  // fewer than two seeds that measured two batch sizes; the standard errors are then all there is).
  std::optional<results::SeedRange> seed_range;
  // Whether the curve fits the batches' means within their seeds' spread (results/lack_of_fit.h);
  // nullopt without a fit, with fewer than 3 fitted batches or no batch with 2 seeds.
  std::optional<results::LackOfFit> lack_of_fit;
  // Run-averaged noise scale: each trial's mean of its finite noise_scale.b_simple rows, then the
  // mean of those per-run averages over the series' trials that have rows.
  std::optional<double> b_simple;
  int b_simple_runs = 0;
  std::optional<results::Interval> b_simple_range;  // min-max of the per-run averages
  // The mean's spread over runs (results/critical_batch.h noise_scale_spread): 95% from a bootstrap
  // of the per-run averages with 3 runs or more.
  results::Spread b_simple_spread;
  // The other definitions of the critical batch (results/critical_batch.h); nullopt without a fit.
  std::optional<results::CriticalBatches> definitions;
};

struct StudyReport {
  std::vector<std::string> targets;  // "val_acc 0.88", one per distinct cell target
  // Setting keys with one value in every cell ("schedule.warmup_fraction=0.05"): shown once.
  std::vector<std::string> constants;
  std::vector<StudyCellSummary> cells;
  std::vector<SeriesFit> fits;
  std::vector<StudyLadder> ladders;  // one per ladder group, for sweeps with a [study.ladder]
  // Each series' effective optimizer settings from its trials' resolved configs, in fits' order
  // (analysis/series_settings.h); a series without configs has empty settings.
  std::vector<SeriesSettings> settings;
  StudyCost cost;
  // Per series and batch: the samples trained there in full-run equivalents
  // (analysis/run_equivalents.h).
  std::vector<RunEquivalents> run_equivalents;
  // The fits at the ladder of shallower targets; empty without evals rows or with several targets.
  std::vector<TargetRung> target_ladder;
  std::vector<std::string> warnings;
};

// Throws StoreInputError for a missing database or study tables without the documented columns.
StudyReport build_study_report(const std::string& db_path, const StudyReportOptions& options);

// The same from records already read (a simulation builds them in memory).
StudyReport study_report_of(const StudyRecords& records);

// The cell table and the fit table as result tables (for table/csv/markdown).
results::QueryResult study_cell_table(const StudyReport& report);
results::QueryResult study_fit_table(const StudyReport& report);

// table / markdown: targets, the cell table, the fit table, the ladder lines, the cost line and the
// warnings. csv:
// the cell table, an empty line, the fit table. json: {"kind": "study", "targets", "cells" (each
// with its "trials"), "fits" (each with "batch_seeds", "fit", "bootstrap" and "seed_range": the
// intervals as [low, high], high null when unbounded), "ladders" (series, sweep_id, batches, stop,
// why, gains, rule), "cost", "warnings"} with unrounded numbers: the figures read it.
std::string format_study_report(const StudyReport& report, results::QueryFormat format);

}  // namespace batchlab::analysis
