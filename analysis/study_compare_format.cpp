// The verdict sentences and renderings of a StudyComparison (analysis/study_compare.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "analysis/study_compare.h"
#include "analysis/table_builder.h"
#include "results/holm.h"

namespace batchlab::analysis {

namespace {

using nlohmann::json;

std::string ratio_number_text(double v) { return std::isinf(v) ? "inf" : fmt::format("{:.2f}", v); }

std::string ratio_interval_text(const RatioEstimate& r) {
  if (r.bound != RatioBound::kNone && r.kind == RatioKind::kConfidence95) {
    return r.bound == RatioBound::kAtLeast ? "95% >= " + ratio_number_text(r.interval.low) + "x"
                                           : "95% <= " + ratio_number_text(r.interval.high) + "x";
  }
  const std::string range =
      ratio_number_text(r.interval.low) + "-" + ratio_number_text(r.interval.high) + "x";
  switch (r.kind) {
    case RatioKind::kConfidence95:
      return "95% " + range;
    case RatioKind::kSeedRange:
      return "seed range " + range;
    case RatioKind::kOneSeed:
      return "one seed";
    case RatioKind::kNone:
      break;
  }
  return "";
}

// A Holm-adjusted p-value as the tables print it: two figures, "<0.001" below that (a bootstrap
// p counts resamples, so 0 means fewer than one in its resamples).
std::string p_text(const std::optional<double>& p) {
  if (!p) return "";
  return *p < 0.001 ? "<0.001" : fmt::format("{:.2g}", *p);
}

std::string verdict_word(Verdict v, const std::string& higher, const std::string& lower) {
  if (v == Verdict::kAHigher) return higher;
  if (v == Verdict::kALower) return lower;
  return "";
}

// "16-256" for a run of table rows, "64" for one.
std::string batch_span(const std::vector<int64_t>& batches) {
  if (batches.size() == 1) return fmt::format("{}", batches.front());
  return fmt::format("{}-{}", batches.front(), batches.back());
}

// A run of consecutive rows with the same verdict.
struct StepsRun {
  Verdict verdict = Verdict::kNone;
  std::vector<int64_t> batches;
  double ratio_low = 1e300, ratio_high = 0.0, interval_low = 1e300, interval_high = 0.0;
};

std::string run_sentence(const StudyComparison& c, const StepsRun& run) {
  const bool slower = run.verdict == Verdict::kAHigher;
  const std::string low = fmt::format("{:.2f}", run.ratio_low);
  const std::string high = fmt::format("{:.2f}", run.ratio_high);
  const std::string ratios = low == high ? low + "x" : low + "-" + high + "x";
  return fmt::format(
      "{} {} than {} ({} steps to target) at batch {}: {} (95% interval{} {}x to {}x)", c.a,
      slower ? "slower" : "faster", c.b, slower ? "more" : "fewer", batch_span(run.batches), ratios,
      run.batches.size() == 1 ? "" : "s from", ratio_number_text(run.interval_low),
      ratio_number_text(run.interval_high));
}

// A batch where one side is censored in every seed and the bound excludes 1: its own sentence.
std::string bound_sentence(const StudyComparison& c, const BatchComparison& row) {
  const RatioEstimate& r = row.steps;
  const bool a_censored = r.bound == RatioBound::kAtLeast;
  const std::string& censored = a_censored ? c.a : c.b;
  const std::string& reached = a_censored ? c.b : c.a;
  const SideAtBatch& side = a_censored ? row.a : row.b;
  return fmt::format(
      "{} {} than {} ({} steps to target) at batch {}: {} {:.2f}x ({} censored in all {} seeds, "
      "cap {:.0f} steps; 95% {} bound {}x, taking {}'s seeds at their caps with {}'s seed spread)",
      c.a, a_censored ? "slower" : "faster", c.b, a_censored ? "more" : "fewer", row.batch,
      a_censored ? "more than" : "less than", *r.ratio, censored, side.seeds, side.cap.value_or(0),
      a_censored ? "lower" : "upper",
      ratio_number_text(a_censored ? r.interval.low : r.interval.high), censored, reached);
}

// "no verdict on the steps at batch 16, 64: why", with the Holm-adjusted p-values where Holm
// withdrew the verdicts.
std::string no_verdict_sentence(const std::string& why,
                                const std::vector<const BatchComparison*>& rows) {
  std::vector<int64_t> batches;
  std::vector<std::string> adjusted;
  for (const auto* row : rows) {
    batches.push_back(row->batch);
    if (row->steps.p && *row->steps.p < results::kFamilyWiseLevel && row->steps.p_holm) {
      adjusted.push_back(p_text(row->steps.p_holm));
    }
  }
  const std::string holm = adjusted.size() == rows.size()
                               ? fmt::format(": Holm-adjusted p = {}", fmt::join(adjusted, ", "))
                               : "";
  return fmt::format("no verdict on the steps at batch {}: {}{}", fmt::join(batches, ", "), why,
                     holm);
}

void steps_verdicts(const StudyComparison& c, std::vector<std::string>& out) {
  std::vector<StepsRun> runs;
  std::vector<std::string> bounds;
  std::map<std::string, std::vector<const BatchComparison*>> no_verdict;  // why -> rows
  std::vector<std::string> why_order;
  for (const auto& row : c.batches) {
    const RatioEstimate& r = row.steps;
    if (r.verdict == Verdict::kNone) {
      auto& rows = no_verdict[r.why];
      if (rows.empty()) why_order.push_back(r.why);
      rows.push_back(&row);
      runs.push_back({});  // a row without a verdict ends a run
      continue;
    }
    if (r.bound != RatioBound::kNone) {
      bounds.push_back(bound_sentence(c, row));
      runs.push_back({});  // a bound is not a ratio: it ends a run too
      continue;
    }
    if (runs.empty() || runs.back().verdict != r.verdict) {
      runs.emplace_back();
      runs.back().verdict = r.verdict;
    }
    StepsRun& run = runs.back();
    run.batches.push_back(row.batch);
    run.ratio_low = std::min(run.ratio_low, *r.ratio);
    run.ratio_high = std::max(run.ratio_high, *r.ratio);
    run.interval_low = std::min(run.interval_low, r.interval.low);
    run.interval_high = std::max(run.interval_high, r.interval.high);
  }
  for (const auto& run : runs) {
    if (run.verdict != Verdict::kNone) out.push_back(run_sentence(c, run));
  }
  out.insert(out.end(), bounds.begin(), bounds.end());
  for (const auto& why : why_order) out.push_back(no_verdict_sentence(why, no_verdict[why]));
}

// The steps pooled over the batches both sides reached in every seed.
void pooled_verdict(const StudyComparison& c, std::vector<std::string>& out) {
  const RatioEstimate& r = c.pooled;
  if (!r.ratio) {
    out.push_back(fmt::format("no pooled ratio of the steps: {}", r.why));
    return;
  }
  const std::string over = fmt::format("pooled over batch {} ({} batches, each weighted equally)",
                                       fmt::join(c.pooled_batches, ", "), c.pooled_batches.size());
  if (r.verdict != Verdict::kNone) {
    const bool slower = r.verdict == Verdict::kAHigher;
    out.push_back(fmt::format("{} {} than {} ({} steps to target) {}: {}x ({})", c.a,
                              slower ? "slower" : "faster", c.b, slower ? "more" : "fewer", over,
                              ratio_number_text(*r.ratio), ratio_interval_text(r)));
    return;
  }
  const std::string interval =
      r.kind == RatioKind::kConfidence95 ? ", " + ratio_interval_text(r) : "";
  out.push_back(fmt::format("no verdict on the steps {}: {}x{}; {}", over,
                            ratio_number_text(*r.ratio), interval, r.why));
}

void fit_verdict(const StudyComparison& c, const std::string& what, const RatioEstimate& r,
                 std::vector<std::string>& out) {
  // A verdict on an ill-fitting curve stands (its interval excludes 1) but says what it rests on.
  const std::string caveat = c.fit_caveat.empty() ? "" : "; but " + c.fit_caveat;
  if (r.verdict != Verdict::kNone) {
    out.push_back(fmt::format("{}'s {} {} {}'s: {}x ({}){}", c.a, what,
                              r.verdict == Verdict::kAHigher ? "above" : "below", c.b,
                              ratio_number_text(*r.ratio), ratio_interval_text(r), caveat));
    return;
  }
  const std::string value =
      r.ratio ? fmt::format(" (ratio {}x{})", ratio_number_text(*r.ratio),
                            r.kind == RatioKind::kNone || r.kind == RatioKind::kOneSeed
                                ? ""
                                : ", " + ratio_interval_text(r))
              : "";
  const bool noted = r.ratio && !c.fit_caveat.empty();
  out.push_back(fmt::format("no verdict on {}{}: {}{}", what, value, r.why,
                            noted ? "; " + c.fit_caveat : ""));
}

results::QueryResult compare_batch_table(const StudyComparison& c) {
  TableBuilder t;
  for (const auto& row : c.batches) {
    t.integer("batch", row.batch);
    t.text("A_seeds", fmt::format("{}/{}", row.a.reached, row.a.seeds));
    t.number("A_steps", row.a.steps, "{:.1f}");
    t.text("B_seeds", fmt::format("{}/{}", row.b.reached, row.b.seeds));
    t.number("B_steps", row.b.steps, "{:.1f}");
    t.number("A/B", row.steps.ratio, "{:.2f}");
    t.text("interval", ratio_interval_text(row.steps));
    t.text("p_holm", p_text(row.steps.p_holm));
    t.text("verdict", verdict_word(row.steps.verdict, "A slower", "A faster"));
    const bool noted = row.steps.verdict == Verdict::kNone || row.steps.bound != RatioBound::kNone;
    t.text("note", noted ? row.steps.why : "");
    t.end_row();
  }
  return t.table;
}

results::QueryResult compare_fit_table(const StudyComparison& c) {
  TableBuilder t;
  for (const auto& [name, r] : {std::pair{"steps, pooled", &c.pooled}, std::pair{"S_min", &c.s_min},
                                std::pair{"B_crit", &c.b_crit}}) {
    t.text("quantity", name);
    t.number("A/B", r->ratio, "{:.2f}");
    t.text("interval", ratio_interval_text(*r));
    t.text("p_holm", p_text(r->p_holm));
    t.text("verdict", verdict_word(r->verdict, "A above", "A below"));
    std::vector<std::string> notes;
    if (r->verdict == Verdict::kNone) notes.push_back(r->why);
    if (r->ratio && !c.fit_caveat.empty() && r != &c.pooled) notes.push_back(c.fit_caveat);
    t.text("note", fmt::format("{}", fmt::join(notes, "; ")));
    t.end_row();
  }
  return t.table;
}

json ratio_end_json(double v) { return std::isinf(v) ? json(nullptr) : json(v); }

json ratio_json(const RatioEstimate& r) {
  static const std::map<RatioKind, const char*> kinds = {{RatioKind::kNone, "none"},
                                                         {RatioKind::kOneSeed, "one_seed"},
                                                         {RatioKind::kSeedRange, "seed_range"},
                                                         {RatioKind::kConfidence95, "95%"}};
  json out = {{"ratio", r.ratio ? ratio_end_json(*r.ratio) : json(nullptr)},
              {"kind", kinds.at(r.kind)},
              {"verdict", verdict_word(r.verdict, "A higher", "A lower")},
              {"bound", r.bound == RatioBound::kAtLeast  ? json("at_least")
                        : r.bound == RatioBound::kAtMost ? json("at_most")
                                                         : json(nullptr)},
              {"why", r.why},
              {"p", r.p ? json(*r.p) : json(nullptr)},
              {"p_holm", r.p_holm ? json(*r.p_holm) : json(nullptr)}};
  if (r.kind == RatioKind::kSeedRange || r.kind == RatioKind::kConfidence95) {
    out["interval"] =
        json::array({ratio_end_json(r.interval.low), ratio_end_json(r.interval.high)});
  }
  return out;
}

json side_json(const SideAtBatch& s) {
  return {{"seeds", s.seeds},
          {"reached", s.reached},
          {"steps", s.steps ? json(*s.steps) : json(nullptr)},
          {"cap", s.cap ? json(*s.cap) : json(nullptr)}};
}

std::string comparison_json(const StudyComparison& c) {
  json batches = json::array();
  for (const auto& row : c.batches) {
    batches.push_back({{"batch", row.batch},
                       {"a", side_json(row.a)},
                       {"b", side_json(row.b)},
                       {"steps_ratio", ratio_json(row.steps)}});
  }
  const json doc = {
      {"kind", "study_comparison"},
      {"a", c.a},
      {"b", c.b},
      {"targets", c.targets},
      {"settings_differ", settings_differ_json(c.settings_known, c.settings)},
      {"batches", batches},
      {"pooled", {{"batches", c.pooled_batches}, {"steps_ratio", ratio_json(c.pooled)}}},
      {"family", {{"method", "holm"}, {"level", results::kFamilyWiseLevel}, {"tests", c.family}}},
      {"fits",
       {{"s_min", ratio_json(c.s_min)},
        {"b_crit", ratio_json(c.b_crit)},
        {"caveat", c.fit_caveat.empty() ? json(nullptr) : json(c.fit_caveat)}}},
      {"verdicts", c.verdicts}};
  return doc.dump(2) + "\n";
}

std::string compare_header(const StudyComparison& c) {
  return fmt::format(
      "Comparison: A = {}, B = {}; target {}.\nPer batch: A/B = the ratio of the geometric means "
      "over the seeds of the steps to target (each seed's best LR); interval \"95%\" = Welch's t "
      "interval on the mean log steps (seeds not paired), only with {} or more seeds a side; "
      "\"seed range\" = min-max over seed pairs (fewer seeds: no verdict). Where one side is "
      "censored in every seed, A/B is a bound (its caps over the other side's steps) and "
      "\"95% >=\" or \"95% <=\" its end, taking the censored seeds at their caps with the other "
      "side's seed spread. A verdict only where a 95% interval excludes 1 and Holm's adjustment "
      "over the comparison's tests keeps it (p_holm < 0.05; the verdicts below).\n",
      c.a, c.b, c.targets, results::kMinSeedsForInterval);
}

std::string compare_fit_header() {
  return fmt::format(
      "Fits (S(B) = S_min + E_min/B, as `batchlab report` fits them): A/B of S_min and B_crit; "
      "\"95%\" = 2.5th-97.5th percentiles over {} paired bootstrap resamples (seeds drawn within "
      "each batch), every resample counted.\n",
      results::kSeedResamples);
}

}  // namespace

std::vector<std::string> comparison_verdicts(const StudyComparison& comparison) {
  std::vector<std::string> out;
  steps_verdicts(comparison, out);
  pooled_verdict(comparison, out);
  fit_verdict(comparison, "S_min", comparison.s_min, out);
  fit_verdict(comparison, "B_crit", comparison.b_crit, out);
  return out;
}

std::string format_study_comparison(const StudyComparison& comparison,
                                    results::QueryFormat format) {
  using results::QueryFormat;
  if (format == QueryFormat::kJson) return comparison_json(comparison);
  const auto batches = compare_batch_table(comparison);
  const auto fits = compare_fit_table(comparison);
  if (format == QueryFormat::kCsv) {
    return results::format_csv(batches) + "\n" + results::format_csv(fits);
  }
  const std::string gap = format == QueryFormat::kMarkdown ? "\n" : "";
  std::string out = compare_header(comparison) + gap +
                    settings_differ_section(comparison.settings_known, comparison.settings,
                                            kSearchedPerCell, format, gap) +
                    results::format_result(batches, format, kAbsentCell) + "\n" +
                    compare_fit_header() + gap + results::format_result(fits, format, kAbsentCell) +
                    "\n";
  // One blank line under the heading and none between the items: a tight Markdown list.
  out += fmt::format(
             "Verdicts at a family-wise error of {:g}% over the {} tests of this comparison that "
             "have a 95% interval (per-batch ratios, pooled ratio, S_min, B_crit; Holm's "
             "step-down): a verdict only where the Holm-adjusted p (p_holm) is below {:g}, which "
             "puts its 95% interval past 1 too:\n",
             100.0 * results::kFamilyWiseLevel, comparison.family, results::kFamilyWiseLevel) +
         gap;
  for (const auto& v : comparison.verdicts) out += fmt::format("- {}\n", v);
  return out;
}

}  // namespace batchlab::analysis
