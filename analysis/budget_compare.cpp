#include "analysis/budget_compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace batchlab::analysis {

namespace {

const BudgetSeries& find_budget_series(const BudgetReport& report, const std::string& name) {
  std::vector<const BudgetSeries*> found;
  std::vector<std::string> known;
  for (const auto& s : report.series) {
    known.push_back(s.series);
    if (s.series == name || s.optimizer == name) found.push_back(&s);
  }
  if (found.size() == 1) return *found.front();
  throw std::invalid_argument(fmt::format("{}: {} series of the search; name one of: {}", name,
                                          found.empty() ? "not a" : "more than one",
                                          fmt::join(known, "; ")));
}

std::string budget_sign_word(double x, const char* above, const char* below) {
  return x > 0 ? above : below;
}

std::string batches_of(const BudgetSeries& s) {
  std::vector<int64_t> out;
  for (const auto& b : s.batches) out.push_back(b.batch);
  return fmt::format("{}", fmt::join(out, ", "));
}

// The held-out value a batch of B is chosen on: the mean over its seeds of the search's metric.
std::optional<double> selection_value(const BudgetBatch& b, bool by_accuracy) {
  double sum = 0.0;
  size_t n = 0;
  for (const auto& s : b.seeds) {
    const auto& v = by_accuracy ? s.val_acc : s.val_loss;
    if (!v) continue;
    sum += *v;
    ++n;
  }
  if (n == 0) return std::nullopt;
  return sum / static_cast<double>(n);
}

// B's best batch: among the batches whose search is done with the most seeds measured, the one
// with the best held-out mean. `rule` says how it was chosen, for the report.
const BudgetBatch& best_batch(const BudgetSeries& b, const std::string& metric, std::string& rule) {
  const bool by_accuracy = metric == "val_acc";
  size_t most = 0;
  for (const auto& x : b.batches) {
    if (x.status == "done" && selection_value(x, by_accuracy))
      most = std::max(most, x.seeds.size());
  }
  const BudgetBatch* best = nullptr;
  std::optional<double> best_value;
  for (const auto& x : b.batches) {
    const auto v = selection_value(x, by_accuracy);
    if (x.status != "done" || !v || x.seeds.size() != most) continue;
    if (!best_value || (by_accuracy ? *v > *best_value : *v < *best_value)) {
      best = &x;
      best_value = v;
    }
  }
  if (!best) {
    throw std::invalid_argument(fmt::format(
        "--b-batch best: {} has no batch whose search is done with a held-out {} to choose on",
        b.series, metric));
  }
  rule = fmt::format(
      "{}'s best batch on held-out data: {} (mean {} {:.4f} over {} seeds, the {} among its "
      "finished batches with {} seeds; the test set only reported)",
      b.series, best->batch, metric, *best_value, most, by_accuracy ? "highest" : "lowest", most);
  return *best;
}

const BudgetBatch& fixed_batch(const BudgetSeries& b, int64_t batch, std::string& rule) {
  for (const auto& x : b.batches) {
    if (x.batch != batch) continue;
    rule = fmt::format("{} at batch {} against every batch of A (--b-batch {})", b.series, batch,
                       batch);
    return x;
  }
  throw std::invalid_argument(fmt::format("--b-batch {}: {} has no cell at that batch; it has {}",
                                          batch, b.series, batches_of(b)));
}

std::vector<double> seed_values(const BudgetBatch& b, bool loss) {
  std::vector<double> out;
  for (const auto& s : b.seeds) {
    const auto& v = loss ? s.test_loss : s.test_acc;
    if (v) out.push_back(*v);
  }
  return out;
}

BudgetBatchComparison compare_batches(const BudgetBatch& a, const BudgetBatch& b) {
  BudgetBatchComparison c;
  c.batch = a.batch;
  c.b_batch = b.batch;
  c.a_steps = a.budget_steps;
  c.b_steps = b.budget_steps;
  c.test_loss = welch_difference(seed_values(a, true), seed_values(b, true));
  c.test_acc = welch_difference(seed_values(a, false), seed_values(b, false));
  return c;
}

std::string batch_verdict(const BudgetComparison& c, const BudgetBatchComparison& row) {
  const Difference& d = *row.test_loss;
  const std::string word = budget_sign_word(d.estimate, "higher", "lower");
  if (c.baseline.kind == BudgetBaseline::Kind::kSameBatch) {
    return fmt::format(
        "at batch {}: {} ends with a {} test loss than {}, by {:+.4f} nats (95% {:+.4f} to "
        "{:+.4f}; {})",
        row.batch, c.a, word, c.b, d.estimate, d.low, d.high, budget_family_text(c));
  }
  return fmt::format(
      "{} at batch {} ({} steps) ends with a {} test loss than {} at batch {} ({} steps, {:.2f}x "
      "as "
      "many), by {:+.4f} nats (95% {:+.4f} to {:+.4f}; {})",
      c.a, row.batch, row.a_steps, word, c.b, row.b_batch, row.b_steps,
      row.a_steps > 0 ? static_cast<double>(row.b_steps) / static_cast<double>(row.a_steps) : 0.0,
      d.estimate, d.low, d.high, budget_family_text(c));
}

// Holm over the batches' test-loss differences and the trend, then the sentences it allows.
void state_verdicts(BudgetComparison& c) {
  std::vector<FamilyTest*> family;
  for (auto& row : c.batches) {
    if (row.test_loss && row.test_loss->min_seeds >= 3) family.push_back(&*row.test_loss);
  }
  if (c.trend_difference && c.trend_difference->min_seeds >= 3)
    family.push_back(&*c.trend_difference);
  c.family = family.size();
  holm(family, 0.05);
  for (const auto& row : c.batches) {
    if (row.test_loss && row.test_loss->holm_rejects) c.verdicts.push_back(batch_verdict(c, row));
  }
  if (const auto& t = c.trend_difference; t && t->holm_rejects) {
    c.verdicts.push_back(fmt::format(
        "as the batch grows, {} loses {} than {}: its final test loss rises {:+.4f} nats per "
        "doubling relative to {}'s (95% {:+.4f} to {:+.4f}, seeds resampled within {} batches; "
        "{})",
        c.a, t->per_doubling > 0 ? "more" : "less", c.b, t->per_doubling, c.b, t->low, t->high,
        t->batches, budget_family_text(c)));
  }
}

}  // namespace

std::string budget_family_text(const BudgetComparison& c) {
  const bool trend = c.trend_difference && c.trend_difference->min_seeds >= 3;
  return fmt::format("Holm over {} tests ({} batches{}), family-wise 5%", c.family,
                     c.family - (trend ? 1 : 0), trend ? " and the trend" : "");
}

std::optional<BudgetBaseline> parse_budget_baseline(const std::string& text) {
  if (text == "best") return BudgetBaseline{BudgetBaseline::Kind::kBest, 0};
  if (text.empty() || text.size() > 9 ||
      !std::all_of(text.begin(), text.end(), [](unsigned char ch) { return std::isdigit(ch); })) {
    return std::nullopt;
  }
  const int64_t batch = std::stoll(text);
  if (batch <= 0) return std::nullopt;
  return BudgetBaseline{BudgetBaseline::Kind::kBatch, batch};
}

BudgetComparison compare_budget_series(const BudgetReport& report, const std::string& a,
                                       const std::string& b, const BudgetBaseline& baseline) {
  const BudgetSeries& sa = find_budget_series(report, a);
  const BudgetSeries& sb = find_budget_series(report, b);
  BudgetComparison out;
  out.a = sa.series;
  out.b = sb.series;
  out.baseline = baseline;
  out.settings_known = !sa.settings.settings.empty() && !sb.settings.settings.empty();
  if (out.settings_known) out.settings = series_differences(sa.settings, sb.settings);
  const BudgetBatch* held = nullptr;
  if (baseline.kind == BudgetBaseline::Kind::kBest)
    held = &best_batch(sb, report.metric, out.baseline_rule);
  if (baseline.kind == BudgetBaseline::Kind::kBatch)
    held = &fixed_batch(sb, baseline.batch, out.baseline_rule);
  for (const auto& batch : sa.batches) {
    const BudgetBatch* other = held;
    if (!other) {
      const auto at = std::find_if(sb.batches.begin(), sb.batches.end(),
                                   [&](const BudgetBatch& x) { return x.batch == batch.batch; });
      if (at == sb.batches.end()) continue;
      other = &*at;
    }
    if (other == held && &sa == &sb && batch.batch == held->batch) continue;  // itself
    out.batches.push_back(compare_batches(batch, *other));
  }
  if (!held)
    out.trend_difference = bootstrap_slope_difference(sa.test_loss_seeds(), sb.test_loss_seeds());
  state_verdicts(out);
  return out;
}

}  // namespace batchlab::analysis
