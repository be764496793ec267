// `batchlab sweep cost STUDY.toml --from PLAIN.db [--workers N] [--format ...]`: what the study's
// search rules cost against the plain stop_at_target grid of the same points, replayed from one
// recording of that grid (sweeps/study/search_cost.h). Runs nothing, writes nothing to PLAIN.db.
#include <fmt/format.h>

#include "analysis/table_builder.h"
#include "cli/app.h"
#include "cli/args.h"
#include "cli/recorded_study.h"
#include "cli/sweep_commands.h"
#include "cli/sweep_context.h"
#include "results/query_result.h"
#include "results/store.h"
#include "sweeps/study/search_cost.h"

namespace batchlab::cli {

namespace {

namespace study = sweeps::study;

constexpr const char* kCostUsage =
    "batchlab sweep cost STUDY.toml --from PLAIN.db [--workers N] [--format "
    "table|csv|json|markdown]\n"
    "  PLAIN.db: a run of the study with [study] race = false (every learning-rate point trained "
    "to its target or cap: the plain stop_at_target grid of the same points). Replays today's "
    "rule (race), + budget_stop, then + neighbours or + rerun_best for the later seeds, from it "
    "with N trials at once (default 2) and "
    "prints each one's trials, samples and trial time against the plain grid's, and how far each "
    "cell's best rate moved against today's rule (docs/sweeps.md \"What the search costs\")";

results::QueryResult rules_table(const study::SearchCost& cost) {
  analysis::TableBuilder b;
  const auto& plain = cost.rules.front();
  for (const auto& r : cost.rules) {
    b.text("rule", r.rule);
    b.integer("trials", static_cast<long long>(r.trials));
    b.integer("samples", r.samples);
    b.number("plain/rule samples",
             r.samples > 0 ? std::optional(static_cast<double>(plain.samples) / r.samples)
                           : std::nullopt,
             "{:.2f}");
    b.number("plain grid of its points / rule samples",
             r.samples > 0 ? std::optional(static_cast<double>(r.own_plain_samples) / r.samples)
                           : std::nullopt,
             "{:.2f}");
    b.number("trial time s", r.trial_s, "{:.0f}");
    b.number("plain/rule time",
             r.trial_s > 0 ? std::optional(plain.trial_s / r.trial_s) : std::nullopt, "{:.2f}");
    b.number("plain grid of its points / rule time",
             r.trial_s > 0 ? std::optional(r.own_plain_s / r.trial_s) : std::nullopt, "{:.2f}");
    b.text("cells reached/censored", fmt::format("{}/{} of {}", r.reached, r.censored, r.cells));
    b.text("best LR moved (grid steps, max; cells > 1)",
           r.rule == "plain" || r.rule == "race"
               ? std::string()
               : fmt::format("{}; {}", r.max_lr_move, r.moved_over_one));
    b.text("steps vs race (geomean; max)",
           r.steps_ratio_mean
               ? fmt::format("{:.3f}; {:.3f}", *r.steps_ratio_mean, r.steps_ratio_max.value_or(0.0))
               : std::string());
    b.integer("missing", static_cast<long long>(r.missing));
    b.end_row();
  }
  return b.table;
}

results::QueryResult cells_table(const study::SearchCost& cost) {
  analysis::TableBuilder b;
  for (const auto& c : cost.cells) {
    b.text("optimizer", c.setting.empty() ? c.optimizer : c.optimizer + " " + c.setting);
    b.integer("batch", c.batch);
    b.integer("seed", c.seed);
    for (size_t k = 0; k < cost.rules.size(); ++k) {
      b.number(cost.rules[k].rule + " best_lr", c.best_lr[k], "{:.6g}");
      b.number(cost.rules[k].rule + " steps", c.steps[k], "{:.1f}");
    }
    b.end_row();
  }
  return b.table;
}

}  // namespace

int cmd_sweep_cost(const std::vector<std::string>& argv) {
  Args args(argv, {{"from", true, false}, {"workers", true, false}, {"format", true, false}},
            kCostUsage);
  const auto from = args.value("from");
  if (!from) throw UsageError(fmt::format("missing --from PLAIN.db\nusage: {}", kCostUsage));
  const auto counts = parse_worker_counts(args.value("workers").value_or("2"), kCostUsage);
  if (counts.size() != 1) {
    throw UsageError(fmt::format("--workers {}: give one count of trials at once\nusage: {}",
                                 *args.value("workers"), kCostUsage));
  }
  const size_t workers = counts.front();
  const std::string format_name = args.value("format").value_or("table");
  const auto format = results::parse_query_format(format_name);
  if (!format) {
    throw UsageError(
        fmt::format("--format {}: not a format; use table, csv, json or markdown", format_name));
  }
  const auto ctx = load_sweep(args.positional("STUDY.toml"), /*keep_config_toml=*/false);
  if (!ctx.spec.study) {
    throw UsageError(fmt::format(
        "{}: not a study (no [study] section); cost replays a scaling study's search rules",
        ctx.spec.source));
  }
  RecordedStudy recorded(*from, "cost",
                         "the database a run of the study with [study] race = false wrote");
  const auto cost = study::compare_search_rules(ctx.spec, ctx.plan, cli_plan_options(),
                                                recorded.store(), recorded.dir().string(), workers);
  if (*format == results::QueryFormat::kJson) {
    fmt::print("{{\"rules\": {},\n\"cells\": {}}}\n",
               results::format_result(rules_table(cost), *format),
               results::format_result(cells_table(cost), *format));
    return kExitOk;
  }
  fmt::print(
      "Study {}: its search rules replayed from {} (a plain stop_at_target grid of the same "
      "points, {} trial(s) at once); samples and trial time are the recording's own up to where "
      "each rule stops a trial.\n{}\nPer cell, the best rate and its steps to target under "
      "each rule (empty where the rule never opened the cell, found no best rate in it or did "
      "not reach the target):\n{}",
      cost.study, *from, cost.workers,
      results::format_result(rules_table(cost), *format, analysis::kAbsentCell),
      results::format_result(cells_table(cost), *format, analysis::kAbsentCell));
  return kExitOk;
}

}  // namespace batchlab::cli
