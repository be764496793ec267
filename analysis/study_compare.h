// `batchlab compare --db STUDY.db A B`: how two series of a scaling study (analysis/study_report.h:
// an optimizer plus the settings that vary) differ, with an interval over the seeds for every ratio
// and a verdict only where that interval excludes 1, so that a sentence such as "LARS slower than
// LAMB at 16-256" is computed by the tool rather than read off a table.
//
// Steps to target at each batch both series measured: the ratio of the geometric means over the
// seeds of A's and B's steps (each seed's best learning rate). Its 95% interval is Welch's t
// interval on the difference of mean log steps (Welch-Satterthwaite degrees of freedom, Student's t
// quantile: results/student_t.h), stated only when both sides ran at least
// results::kMinSeedsForInterval seeds; the two series are not paired by seed (a seed fixes the
// initial weights and the data order, not an optimizer's noise), which keeps the interval wide
// rather than optimistic. With fewer seeds the row gives the seed range (the smallest and largest
// ratio over all pairs of A's and B's seeds), named as such, and no verdict. A batch where a seed
// of either side is censored or still searching gets no ratio: its steps are unknown, with one
// exception: where every seed of one side is censored (no learning rate reached the target within
// the cap) and every seed of the other reached, the censored side's steps exceed its caps, so the
// ratio is bounded on one side: A/B > caps/B when A is censored, < A/caps when B is. The bound's
// 95% end takes the censored seeds at their caps (the least they can be) with the reached side's
// seed spread on log steps for both (the censored side's own spread is unknown): standard error s *
// sqrt(1/n_censored + 1/n_reached), Student's t with n_reached - 1 degrees of freedom, and only
// with results::kMinSeedsForInterval seeds a side. This is how "LARS, censored at 6,000 steps at
// every rate, is more than 7x slower than LAMB" comes from the tool rather than from a reader.
//
// S_min and B_crit of the fits: the ratio of A's fitted value to B's, with the 2.5th-97.5th
// percentiles over paired bootstrap resamples (results::resample_seed_fits, the two series drawn
// from independent generators), every resample counted: a resample whose ratio has no value (both
// B_crit unbounded, say) counts at the low end as 0 and at the high end as infinity, so it can only
// widen the interval. Fewer than 3 seeds at a fitted batch: the seed range of the per-seed fits'
// ratios, no verdict.
//
// Verdicts at a family-wise level: a comparison asks one question per batch, plus the pooled
// ratio, S_min and B_crit. Stating a verdict wherever a test's own 95% interval excludes 1 would,
// with no true difference at 6 batches and 3 seeds a side, print a false verdict in about one
// comparison in five (issue 46). So every test with a 95% interval gets a p-value (Welch's t test;
// the one-sided t test of a censored bound, doubled; for the bootstrap ratios, twice the share of
// resamples on the far side of 1), and Holm's step-down procedure (results/holm.h) adjusts them
// over the family: a verdict only where the adjusted p < 0.05, so the chance of any false verdict
// in one comparison stays at or below 5% (analysis/compare_family.h,
// tests/analysis/compare_family_test.cpp measures it on simulated comparisons).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/optimizer_settings.h"
#include "analysis/study_report.h"
#include "results/query_result.h"
#include "results/seed_bootstrap.h"

namespace batchlab::analysis {

enum class RatioKind {
  kNone,          // no ratio (a side censored, searching or without a fit)
  kOneSeed,       // a ratio, one seed a side: no spread to state
  kSeedRange,     // min-max over seed pairs or per-seed fits: fewer than 3 seeds
  kConfidence95,  // a 95% interval
};

// Which way a 95% interval that excludes 1 points: A's value above B's, or below.
enum class Verdict { kNone, kAHigher, kALower };

// Whether a ratio is a value or only a bound: A censored in every seed (A/B at least the ratio) or
// B censored in every seed (at most).
enum class RatioBound { kNone, kAtLeast, kAtMost };

struct RatioEstimate {
  std::optional<double> ratio;  // A / B
  RatioKind kind = RatioKind::kNone;
  results::Interval interval;  // for kSeedRange and kConfidence95; high may be +infinity
  Verdict verdict = Verdict::kNone;
  RatioBound bound = RatioBound::kNone;  // kAtLeast: interval [low, +inf]; kAtMost: [0, high]
  std::string why;  // why there is no ratio or no verdict ("B: 1 of 3 seeds censored")
  // With a 95% interval: the two-sided p-value of "A/B = 1" that the interval inverts (p < 0.05
  // exactly when it excludes 1), and that p adjusted by Holm over the comparison's family
  // (analysis/compare_family.h); the verdict stands only where p_holm < 0.05.
  std::optional<double> p, p_holm;
};

struct SideAtBatch {
  int seeds = 0;                // distinct seeds with a cell at the batch
  int reached = 0;              // of them, seeds whose every cell reached
  std::optional<double> steps;  // geometric mean over the seeds, when every seed reached
  std::optional<double> cap;    // geometric mean of the caps in steps, when every seed is censored
};

struct BatchComparison {
  int64_t batch = 0;
  SideAtBatch a, b;
  RatioEstimate steps;  // A's steps to target over B's
};

struct StudyComparison {
  std::string a, b;                      // the series
  std::string targets;                   // "val_loss 5.2"
  std::vector<BatchComparison> batches;  // every batch either side has cells at, ascending
  RatioEstimate s_min, b_crit;
  // A's steps over B's pooled over every batch where both reached in every seed (results/
  // pooled_ratio.h): the geometric mean of those batches' ratios, its interval a bootstrap of the
  // seeds within each batch.
  RatioEstimate pooled;
  std::vector<int64_t> pooled_batches;
  int family = 0;  // the tests whose verdicts Holm controls together (those with a p-value)
  // Empty, or which side's curve misses its batches' means by more than their seeds' spread
  // allows (results/lack_of_fit.h, p < 0.05): its S_min and B_crit ratios compare a rough fit.
  std::string fit_caveat;
  std::vector<std::string> verdicts;  // sentences, in the order steps, S_min, B_crit
  // The optimizer settings in which A's trials and B's differ (analysis/series_settings.h), and
  // whether both sides had resolved configs to compare (false: the database has no runs rows).
  std::vector<SettingDiff> settings;
  bool settings_known = false;
};

// Throws InputError when the database holds no study or A or B names no series of it (the message
// lists the series), results::StoreInputError for a missing or unreadable database.
StudyComparison compare_study_series(const std::string& db_path, const std::string& a,
                                     const std::string& b,
                                     const std::optional<std::string>& sweep_id = {});

// The same on a report already built; `source` names it in errors (the database path).
StudyComparison compare_report_series(const StudyReport& report, const std::string& a,
                                      const std::string& b, const std::string& source);

// The verdict sentences of `comparison` (StudyComparison::verdicts): the runs of consecutive
// batches whose 95% interval of the steps ratio excludes 1 on the same side ("lars slower than
// lamb at batch 16-256: 2.41-3.10x (95% intervals 2.02x to 3.71x)"), the batches without a verdict
// and why, then S_min and B_crit.
std::vector<std::string> comparison_verdicts(const StudyComparison& comparison);

// table / markdown: a header, the settings in which A and B differ, the per-batch table, the fit
// table and the verdict lines; csv: the per-batch table and the fit table; json: {"kind":
// "study_comparison", "a", "b", "targets", "settings_differ" ([{key, a, b}], null when unknown),
// "batches", "fits", "verdicts"} with unrounded numbers (an unbounded end as null).
std::string format_study_comparison(const StudyComparison& comparison, results::QueryFormat format);

}  // namespace batchlab::analysis
