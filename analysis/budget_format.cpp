// The renderings of a fixed-budget search's report and comparison (analysis/budget_report.h): a
// table or Markdown for people, CSV of the per-batch rows, JSON with every number.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "analysis/budget_compare.h"
#include "analysis/budget_report.h"
#include "analysis/table_builder.h"

namespace batchlab::analysis {

namespace {

using BudgetJson = nlohmann::ordered_json;

// What the settings of a fixed-budget comparison leave out, and where they are read from.
constexpr std::string_view kSearchedPerBatch =
    "the learning rate and the [search] knobs are searched per batch, so a batch's values are its "
    "best runs' once its search has chosen and every value tried (\"searched: ...\") while it "
    "searches";

std::string budget_interval_text(const std::optional<SeedInterval>& v, const char* spec) {
  if (!v) return "";
  const std::string mean = fmt::format(fmt::runtime(spec), v->mean);
  if (!v->low) return mean + " (1 seed)";
  return fmt::format("{} ({} {}-{})", mean, v->is_95 ? "95%" : "range",
                     fmt::format(fmt::runtime(spec), *v->low),
                     fmt::format(fmt::runtime(spec), *v->high));
}

std::string budget_slope_text(const std::optional<Slope>& s) {
  if (!s) return "";
  return fmt::format("{:+.4f}/doubling ({} {:+.4f} to {:+.4f}, {} batches)", s->per_doubling,
                     s->min_seeds >= 3 ? "95%" : "not 95%: <3 seeds,", s->low, s->high, s->batches);
}

std::string budget_point_text(const BudgetBatch& b) {
  std::string out;
  for (const auto& k : b.knobs) {
    if (!out.empty()) out += " ";
    const auto dot = k.key.find('.');
    out += fmt::format("{}={}{}", dot == std::string::npos ? k.key : k.key.substr(dot + 1), k.best,
                       k.edge.empty() ? "" : "*");
  }
  return out;
}

results::QueryResult budget_batch_table(const BudgetReport& r) {
  TableBuilder t;
  for (const auto& s : r.series) {
    for (const auto& b : s.batches) {
      t.text("series", s.series);
      t.integer("batch", b.batch);
      t.number("epochs", b.epochs, "{:.3g}");
      t.integer("steps", b.budget_steps);
      t.text("search", b.status);
      t.text("best point (* at an edge of what was tried)", budget_point_text(b));
      t.integer("trials", b.search_trials);
      t.integer("samples", b.search_samples);
      t.number("run equivalents", b.run_equivalents(), "{:.2f}");
      t.integer("seeds", static_cast<long long>(b.seeds.size()));
      t.text("test loss", budget_interval_text(b.test_loss, "{:.4f}"));
      t.text("test acc", budget_interval_text(b.test_acc, "{:.4f}"));
      t.text("val loss (selected on)", budget_interval_text(b.val_loss, "{:.4f}"));
      t.end_row();
    }
  }
  return t.table;
}

results::QueryResult budget_series_table(const BudgetReport& r) {
  TableBuilder t;
  for (const auto& s : r.series) {
    int64_t search = 0;
    double equivalents = 0.0;
    for (const auto& b : s.batches) {
      search += b.search_samples;
      equivalents += b.run_equivalents();
    }
    t.text("series", s.series);
    t.integer("trials", s.trials);
    t.integer("samples (all seeds)", s.samples);
    t.integer("search samples", search);
    t.number("search run equivalents", equivalents, "{:.2f}");
    t.text("test loss vs log2(batch)", budget_slope_text(s.test_loss_trend));
    t.text("test acc vs log2(batch)", budget_slope_text(s.test_acc_trend));
    t.end_row();
  }
  return t.table;
}

BudgetJson budget_interval_json(const std::optional<SeedInterval>& v) {
  if (!v) return nullptr;
  return {{"mean", v->mean},
          {"low", v->low ? BudgetJson(*v->low) : BudgetJson(nullptr)},
          {"high", v->high ? BudgetJson(*v->high) : BudgetJson(nullptr)},
          {"seeds", v->n},
          {"is_95", v->is_95}};
}

BudgetJson budget_slope_json(const std::optional<Slope>& s) {
  if (!s) return nullptr;
  return {{"per_doubling", s->per_doubling},
          {"low", s->low},
          {"high", s->high},
          {"batches", s->batches},
          {"min_seeds", s->min_seeds},
          {"is_95", s->min_seeds >= 3},
          {"p", s->p},
          {"holm_rejects", s->holm_rejects}};
}

BudgetJson budget_opt(const std::optional<double>& v) {
  return v ? BudgetJson(*v) : BudgetJson(nullptr);
}

BudgetJson budget_report_json(const BudgetReport& r) {
  BudgetJson out = {{"kind", "fixed_budget_search"}, {"db", r.db}, {"series", BudgetJson::array()}};
  for (const auto& s : r.series) {
    BudgetJson series = {{"series", s.series},
                         {"optimizer", s.optimizer},
                         {"trials", s.trials},
                         {"samples", s.samples},
                         {"test_loss_trend", budget_slope_json(s.test_loss_trend)},
                         {"test_acc_trend", budget_slope_json(s.test_acc_trend)},
                         {"batches", BudgetJson::array()}};
    for (const auto& b : s.batches) {
      BudgetJson knobs = BudgetJson::array();
      for (const auto& k : b.knobs) {
        knobs.push_back({{"key", k.key},
                         {"tried", k.tried},
                         {"best", k.best},
                         {"edge", k.edge.empty() ? BudgetJson(nullptr) : BudgetJson(k.edge)}});
      }
      BudgetJson seeds = BudgetJson::array();
      for (const auto& run : b.seeds) {
        seeds.push_back({{"seed", run.seed},
                         {"run_id", run.run_id},
                         {"val_loss", budget_opt(run.val_loss)},
                         {"val_acc", budget_opt(run.val_acc)},
                         {"test_loss", budget_opt(run.test_loss)},
                         {"test_acc", budget_opt(run.test_acc)}});
      }
      series["batches"].push_back({{"batch", b.batch},
                                   {"epochs", budget_opt(b.epochs)},
                                   {"budget_steps", b.budget_steps},
                                   {"status", b.status},
                                   {"rung_steps", b.rung_steps},
                                   {"points", b.points},
                                   {"knobs", knobs},
                                   {"search_trials", b.search_trials},
                                   {"search_samples", b.search_samples},
                                   {"rerun_samples", b.rerun_samples},
                                   {"run_equivalents", b.run_equivalents()},
                                   {"seeds", seeds},
                                   {"test_loss", budget_interval_json(b.test_loss)},
                                   {"test_acc", budget_interval_json(b.test_acc)},
                                   {"val_loss", budget_interval_json(b.val_loss)}});
    }
    out["series"].push_back(series);
  }
  return out;
}

}  // namespace

std::string format_budget_report(const BudgetReport& r, results::QueryFormat format) {
  if (format == results::QueryFormat::kJson) return budget_report_json(r).dump(1) + "\n";
  if (format == results::QueryFormat::kCsv)
    return results::format_result(budget_batch_table(r), format);
  std::string out;
  const bool md = format == results::QueryFormat::kMarkdown;
  out += md ? "### Fixed-budget search: per series and batch\n\n"
            : "fixed-budget search: the best point of each (series, batch), chosen on the first "
              "seed's validation loss by successive halving; test metrics only reported\n";
  out += results::format_result(budget_batch_table(r), format);
  out += md ? "\n### Budget spent and trend per series\n\n" : "\nbudget spent and trend:\n";
  out += results::format_result(budget_series_table(r), format);
  out += md ? "\n" : "";
  out +=
      "An interval is 95% (Student's t over the seeds) only from 3 seeds; a trend's interval "
      "resamples the seeds within each batch.\n";
  return out;
}

namespace {

BudgetJson budget_comparison_json(const BudgetComparison& c) {
  BudgetJson out = {
      {"a", c.a}, {"b", c.b}, {"batches", BudgetJson::array()}, {"verdicts", c.verdicts}};
  auto diff = [](const std::optional<Difference>& d) -> BudgetJson {
    if (!d) return nullptr;
    return {{"estimate", d->estimate},
            {"low", d->low},
            {"high", d->high},
            {"p", d->p},
            {"min_seeds", d->min_seeds},
            {"is_95", d->min_seeds >= 3},
            {"holm_rejects", d->holm_rejects}};
  };
  const bool same = c.baseline.kind == BudgetBaseline::Kind::kSameBatch;
  out["baseline"] = {{"kind", same                                             ? "same_batch"
                              : c.baseline.kind == BudgetBaseline::Kind::kBest ? "best"
                                                                               : "batch"},
                     {"rule", same ? BudgetJson(nullptr) : BudgetJson(c.baseline_rule)}};
  for (const auto& b : c.batches) {
    out["batches"].push_back({{"batch", b.batch},
                              {"b_batch", b.b_batch},
                              {"a_steps", b.a_steps},
                              {"b_steps", b.b_steps},
                              {"test_loss_difference", diff(b.test_loss)},
                              {"test_acc_difference", diff(b.test_acc)}});
  }
  out["settings_differ"] = settings_differ_json(c.settings_known, c.settings);
  out["trend_difference"] = budget_slope_json(c.trend_difference);
  out["family"] = budget_family_text(c);
  return out;
}

std::string budget_difference_text(const std::optional<Difference>& d) {
  if (!d) return "";
  if (d->min_seeds < 3) {
    return fmt::format("{:+.4f} ({} seeds on a side: no interval called 95%)", d->estimate,
                       d->min_seeds);
  }
  return fmt::format("{:+.4f} (95% {:+.4f} to {:+.4f}, p {:.3g}){}", d->estimate, d->low, d->high,
                     d->p, d->holm_rejects ? " *" : "");
}

std::string budget_trend_line(const BudgetComparison& c) {
  if (c.baseline.kind != BudgetBaseline::Kind::kSameBatch) {
    return fmt::format("trend: none ({} is held at batch {}; a trend compares the same batches)\n",
                       c.b, c.batches.empty() ? 0 : c.batches.front().b_batch);
  }
  const auto& t = c.trend_difference;
  return fmt::format(
      "trend of the final test loss, {} minus {}: {}{}\n", c.a, c.b,
      t ? budget_slope_text(t) : "fewer than 2 batches",
      t && t->min_seeds >= 3 ? fmt::format(" p {:.3g}{}", t->p, t->holm_rejects ? " *" : "") : "");
}

}  // namespace

std::string format_budget_comparison(const BudgetComparison& c, results::QueryFormat format) {
  if (format == results::QueryFormat::kJson) return budget_comparison_json(c).dump(1) + "\n";
  const bool same = c.baseline.kind == BudgetBaseline::Kind::kSameBatch;
  TableBuilder t;
  for (const auto& b : c.batches) {
    t.integer(same ? "batch" : fmt::format("{} batch", c.a), b.batch);
    if (!same) t.integer(fmt::format("{} batch", c.b), b.b_batch);
    t.text(fmt::format("steps {} / {}", c.a, c.b), fmt::format("{} / {}", b.a_steps, b.b_steps));
    t.text(fmt::format("test loss {} - {}", c.a, c.b), budget_difference_text(b.test_loss));
    t.text(fmt::format("test acc {} - {}", c.a, c.b), budget_difference_text(b.test_acc));
    t.end_row();
  }
  const std::string gap = format == results::QueryFormat::kMarkdown ? "\n" : "";
  std::string out =
      same ? fmt::format("{} against {} (a fixed budget per batch)\n", c.a, c.b) + gap
           : fmt::format("{} against {} at one batch of B: {}\n", c.a, c.b, c.baseline_rule) + gap;
  out += settings_differ_section(c.settings_known, c.settings, kSearchedPerBatch, format, gap);
  out += results::format_result(t.table, format);
  out += budget_trend_line(c);
  out += "* " + budget_family_text(c) + "\nverdicts:\n";
  if (c.verdicts.empty()) out += "- none: no interval excludes 0 at the stated level\n";
  for (const auto& v : c.verdicts) out += "- " + v + "\n";
  return out;
}

}  // namespace batchlab::analysis
