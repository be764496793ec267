// `batchlab compare --db STUDY.db A B [--sweep ID] [--b-batch best|N] [--format ...]`: two series
// of a scaling study side by side, with intervals over the seeds and verdicts only where an
// interval excludes 1 (analysis/study_compare.h), or of a fixed-budget search
// (analysis/budget_compare.h).
#include <fmt/format.h>

#include <stdexcept>

#include "analysis/budget_compare.h"
#include "analysis/budget_report.h"
#include "analysis/study_compare.h"
#include "cli/app.h"
#include "cli/args.h"

namespace batchlab::cli {

namespace {

constexpr const char* kCompareUsage =
    "batchlab compare --db STUDY.db A B [--sweep ID] [--b-batch best|N]\n"
    "                 [--format table|csv|json|markdown]\n"
    "  A and B are series of the study as `batchlab report` names them (an optimizer, then the "
    "settings that vary: 'lars optim.trust_coefficient=0.01'). Prints per batch A's steps to "
    "target over B's with a 95% interval over the seeds (Welch's t on log steps; 3 or more seeds "
    "a side, else the seed range; where one side is censored in every seed, a one-sided bound from "
    "its caps), the same pooled over the batches and for the fits' S_min and B_crit (bootstrap "
    "over the seeds), and a verdict only where the Holm-adjusted p is below 0.05 over the "
    "comparison's tests (a family-wise error of 5%). On a fixed-budget search ([search]): per "
    "batch A's final test loss and accuracy minus B's (Welch), the difference of their trends "
    "over log2(batch), Holm over the batches and the trend; --b-batch N meets every batch of A "
    "with B at batch N, --b-batch best with B's batch of the best held-out metric (a batch-size "
    "ramp against the best fixed batch), each row with both sides' steps";

}  // namespace

int cmd_compare(const std::vector<std::string>& argv) {
  Args args(argv,
            {{"db", true, false},
             {"sweep", true, false},
             {"format", true, false},
             {"b-batch", true, false}},
            kCompareUsage);
  const auto db = args.value("db");
  if (!db) throw UsageError(fmt::format("missing --db STUDY.db\nusage: {}", kCompareUsage));
  if (args.positionals().size() != 2) {
    throw UsageError(fmt::format("give two series, A and B ({} given)\nusage: {}",
                                 args.positionals().size(), kCompareUsage));
  }
  const std::string format_name = args.value("format").value_or("table");
  const auto format = results::parse_query_format(format_name);
  if (!format) {
    throw UsageError(
        fmt::format("--format {}: not a format; use table, csv, json or markdown\nusage: {}",
                    format_name, kCompareUsage));
  }
  analysis::BudgetBaseline baseline;
  if (const auto b_batch = args.value("b-batch")) {
    const auto parsed = analysis::parse_budget_baseline(*b_batch);
    if (!parsed) {
      throw UsageError(fmt::format(
          "--b-batch {}: not a batch; give best (B's batch with the best held-out metric) or a "
          "batch size of B such as 64\nusage: {}",
          *b_batch, kCompareUsage));
    }
    baseline = *parsed;
  }
  if (analysis::has_budget_search(*db)) {
    try {
      const auto report = analysis::build_budget_report(*db);
      const auto comparison = analysis::compare_budget_series(report, args.positionals()[0],
                                                              args.positionals()[1], baseline);
      fmt::print("{}", analysis::format_budget_comparison(comparison, *format));
    } catch (const std::invalid_argument& e) {
      throw UsageError(fmt::format("{}\nusage: {}", e.what(), kCompareUsage));
    }
    return kExitOk;
  }
  if (args.value("b-batch")) {
    throw UsageError(fmt::format(
        "--b-batch: {} holds a steps-to-target study, where both series are compared at each "
        "batch; --b-batch applies to a fixed-budget search ([search])\nusage: {}",
        *db, kCompareUsage));
  }
  const auto comparison = analysis::compare_study_series(
      *db, args.positionals()[0], args.positionals()[1], args.value("sweep"));
  fmt::print("{}", analysis::format_study_comparison(comparison, *format));
  return kExitOk;
}

}  // namespace batchlab::cli
