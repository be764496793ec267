// `batchlab compare` on a fixed-budget search (analysis/budget_report.h): two series' final test
// metrics side by side, with the settings in which they differ printed first.
//
// Which of B's batches each of A's batches meets (BudgetBaseline):
//   - the same batch (the default): the LAMB paper's question, "does LARS lose more than LAMB as
//     the batch grows", per batch and on the trend (the difference of the two slopes over
//     log2(batch), seeds resampled within each batch);
//   - one batch of B for every batch of A (`--b-batch N`), or B's best batch (`--b-batch best`):
//     the question of a batch-size schedule, "does the ramp to 256 keep the loss of the best fixed
//     batch in fewer steps" (Merrill et al. 2025; Smith et al. 2017). B's best batch is chosen on
//     the search's held-out metric (the mean over seeds of the validation loss, or accuracy when
//     the search selected on it) among its batches with the most seeds and a finished search; the
//     test set is only reported. Each row states both sides' steps, so a saving always has its
//     baseline. There is no trend here: B is held at one batch.
//
// Every difference is Welch's (budget_stats.h); the batches' differences and the trend form one
// family, and a verdict stands only where Holm's step-down rejects at a family-wise 5%.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/budget_report.h"

namespace batchlab::analysis {

struct BudgetBaseline {
  enum class Kind { kSameBatch, kBatch, kBest };
  Kind kind = Kind::kSameBatch;
  int64_t batch = 0;  // kBatch: B's batch every row meets
};

// "best" or a positive integer (the value of `--b-batch`); nullopt for anything else.
std::optional<BudgetBaseline> parse_budget_baseline(const std::string& text);

struct BudgetBatchComparison {
  int64_t batch = 0;                              // A's
  int64_t b_batch = 0;                            // B's: the same batch, or the baseline
  int64_t a_steps = 0, b_steps = 0;               // the two cells' budgets in optimizer steps
  std::optional<Difference> test_loss, test_acc;  // a - b
};

struct BudgetComparison {
  std::string a, b;
  BudgetBaseline baseline;
  std::string baseline_rule;  // how B's batch was chosen, when it is one batch
  std::vector<BudgetBatchComparison> batches;
  std::optional<Slope> trend_difference;  // slope(a) - slope(b) of the final test loss
  size_t family = 0;                      // the tests Holm controls together
  // The settings in which the two lines differ (differing_settings of their series' settings);
  // settings_known is false when a side has no resolved config.
  bool settings_known = false;
  std::vector<SettingDiff> settings;
  std::vector<std::string> verdicts;
};

// Throws std::invalid_argument naming the series known when `a` or `b` is not one, and the
// batches B has when the baseline names none of them (or B has no finished batch to be best).
BudgetComparison compare_budget_series(const BudgetReport& report, const std::string& a,
                                       const std::string& b, const BudgetBaseline& baseline = {});
// "Holm over 5 tests (4 batches and the trend), family-wise 5%": the family its verdicts share.
std::string budget_family_text(const BudgetComparison& c);
std::string format_budget_comparison(const BudgetComparison& c, results::QueryFormat format);

}  // namespace batchlab::analysis
