#include "cli/sweep_budget.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "analysis/table_builder.h"
#include "cli/app.h"
#include "cli/sweep_study.h"
#include "core/errors.h"
#include "results/errors.h"
#include "results/query.h"
#include "results/query_result.h"
#include "results/store.h"
#include "sweeps/derived.h"
#include "sweeps/study/budget_engine.h"
#include "sweeps/study/trial_source.h"
#include "sweeps/sweep_records.h"

namespace batchlab::cli {

namespace {

namespace study = sweeps::study;

// The progress lines of `sweep run` on a [search].
class BudgetPrinter : public sweeps::RunObserver, public study::BudgetObserver {
 public:
  void trial_started(const sweeps::Job& job, const results::BudgetTrialRow& row,
                     int64_t stop_step) override {
    fmt::print("[start] {} batch {} seed {} point {} rung {} (to step {}): {}\n", job.optimizer,
               job.global_batch, job.seed, row.point_index, row.rung, stop_step,
               one_line(row.point));
    std::fflush(stdout);
  }
  void cell_completed(const results::BudgetCellRow& row) override {
    fmt::print("[cell] {} batch {} seed {}: {}{}; {} trials, {} samples\n", row.optimizer,
               row.global_batch, row.seed, row.status,
               row.best_point ? " at " + one_line(*row.best_point) : "", row.trials,
               row.samples_trained);
    std::fflush(stdout);
  }
  void finished(const sweeps::JobEvent& e) override {
    if (e.status == "done" || e.status == "stopped") return;
    fmt::print("[{}] {} {}{}\n", e.status, e.job->run_id, e.exit, e.retry ? " (retrying)" : "");
    std::fflush(stdout);
  }
  void stopping(int level) override {
    fmt::print("stopping ({}): {}\n", level,
               level == 1 ? "running trials end at once and resume from their checkpoints next "
                            "time; press Ctrl-C again to kill them"
                          : "killing the running trials");
    std::fflush(stdout);
  }

 private:
  static std::string one_line(std::string text) {
    while (!text.empty() && text.back() == '\n') text.pop_back();
    for (auto& c : text) {
      if (c == '\n') c = ';';
    }
    return text;
  }
};

std::string rungs_text(const std::vector<int64_t>& rungs) {
  return fmt::format("{}", fmt::join(rungs, ","));
}

// What the whole search trains, at most: every point to r_0, the survivors on to each next rung.
int64_t planned_samples(const study::BudgetPlan& plan, size_t c) {
  const auto& cell = plan.cells[c];
  const sweeps::Job& job = plan.job(c);
  // In examples, not steps x batch: under a batch-size schedule a step's batch depends on where
  // it falls (sweeps/derived.h).
  const auto samples = [&](int64_t steps) {
    return sweeps::samples_after(job.derived, job.global_batch, steps);
  };
  if (cell.first_seed) return samples(cell.budget_steps);
  int64_t n = static_cast<int64_t>(cell.points.size()), previous = 0, total = 0;
  for (int64_t r : cell.rung_steps) {
    total += n * (samples(r) - samples(previous));
    previous = r;
    n = (n + plan.search().eta - 1) / plan.search().eta;
  }
  return total;
}

}  // namespace

study::BudgetPlan checked_budget_plan(const SweepContext& ctx) {
  auto plan = study::plan_budget_search(ctx.spec, ctx.plan, cli_plan_options());
  // Every point's config is built now: a knob value the experiment refuses is bad input, reported
  // before anything runs or is recorded.
  for (size_t c = 0; c < plan.cells.size(); ++c) {
    if (plan.cells[c].first_seed) continue;
    for (const auto& p : plan.cells[c].points) study::make_budget_trial(plan, c, p);
  }
  return plan;
}

int print_budget_plan(const SweepContext& ctx, const std::string& format) {
  const auto plan = checked_budget_plan(ctx);
  const auto& s = plan.search();
  if (format == "json") {
    nlohmann::ordered_json j = {
        {"sweep", ctx.spec.name},
        {"results", ctx.spec.results},
        {"search",
         {{"method", "halving"}, {"metric", s.metric}, {"eta", s.eta}, {"rungs", s.rungs}}},
        {"cells", nlohmann::ordered_json::array()}};
    for (size_t c = 0; c < plan.cells.size(); ++c) {
      const auto& cell = plan.cells[c];
      nlohmann::ordered_json knobs = nlohmann::ordered_json::object();
      for (const auto& k : cell.knobs) knobs[k.key] = k.values;
      j["cells"].push_back({{"index", c + 1},
                            {"cell_id", cell.cell_id},
                            {"coordinates", ctx.plan.describe(plan.job(c))},
                            {"series", cell.series},
                            {"budget_steps", cell.budget_steps},
                            {"rung_steps", cell.rung_steps},
                            {"points", cell.first_seed ? 1 : cell.points.size()},
                            {"knobs", knobs},
                            {"samples_at_most", planned_samples(plan, c)}});
    }
    fmt::print("{}\n", j.dump(1));
    return kExitOk;
  }
  results::QueryResult table;
  table.columns = {"#"};
  for (const auto& k : ctx.plan.coordinate_keys) table.columns.push_back(k);
  for (const char* c : {"cell_id", "budget steps", "rungs", "points", "samples at most"}) {
    table.columns.emplace_back(c);
  }
  int64_t total = 0;
  for (size_t c = 0; c < plan.cells.size(); ++c) {
    const auto& cell = plan.cells[c];
    std::vector<std::optional<std::string>> row = {std::to_string(c + 1)};
    for (const auto& v : plan.job(c).coordinates) row.emplace_back(v);
    row.emplace_back(cell.cell_id);
    row.emplace_back(std::to_string(cell.budget_steps));
    row.emplace_back(rungs_text(cell.rung_steps));
    row.emplace_back(cell.first_seed ? "1 (best of seed " +
                                           std::to_string(plan.job(*cell.first_seed).seed) + ")"
                                     : std::to_string(cell.points.size()));
    row.emplace_back(std::to_string(planned_samples(plan, c)));
    total += planned_samples(plan, c);
    table.rows.push_back(std::move(row));
  }
  fmt::print("search {}: {} cells; successive halving on {} (eta {}), {} samples at most\n",
             ctx.spec.name, plan.cells.size(), s.metric, s.eta, total);
  fmt::print("{}", results::format_table(table));
  std::map<std::string, std::string> knobs_by_series;
  for (const auto& cell : plan.cells) {
    std::string text;
    for (const auto& k : cell.knobs) {
      text += fmt::format("  {} = [{}]\n", k.key, fmt::join(k.values, ", "));
    }
    knobs_by_series[cell.series] = text;
  }
  for (const auto& [series, text] : knobs_by_series) {
    fmt::print(
        "\n{} searches ({} points per cell; optim.base_lr around the job's own, per "
        "batch):\n{}",
        series.empty() ? "every line" : series, plan.cells.front().points.size(), text);
  }
  return kExitOk;
}

int print_budget_status(const SweepContext& ctx) {
  const auto plan = study::plan_budget_search(ctx.spec, ctx.plan, cli_plan_options());
  std::map<std::string, results::BudgetCellRow> stored;
  std::error_code ec;
  if (std::filesystem::exists(ctx.spec.results, ec)) {
    try {
      const auto found = results::query_readonly(
          ctx.spec.results,
          "SELECT cell_id, status, trials, samples_trained, best_point FROM budget_cells WHERE "
          "sweep_id = ?1",
          {ctx.plan.sweep_name});
      for (const auto& r : found.rows) {
        results::BudgetCellRow row;
        row.status = r[1].value_or("");
        row.trials = std::stoll(r[2].value_or("0"));
        row.samples_trained = std::stoll(r[3].value_or("0"));
        row.best_point = r[4];
        stored[r[0].value_or("")] = row;
      }
    } catch (const results::StoreError&) {
      // A database from before budget searches (no budget_cells yet): nothing recorded.
    }
  }
  results::QueryResult table;
  table.columns = {"#", "cell", "status", "trials", "samples", "best point"};
  std::map<std::string, size_t> counts;
  for (size_t c = 0; c < plan.cells.size(); ++c) {
    const auto it = stored.find(plan.cells[c].cell_id);
    const bool known = it != stored.end();
    const std::string status = known ? it->second.status : "not started";
    ++counts[status];
    table.rows.push_back({std::to_string(c + 1), ctx.plan.describe(plan.job(c)), status,
                          known ? std::to_string(it->second.trials) : "0",
                          known ? std::to_string(it->second.samples_trained) : "0",
                          known && it->second.best_point
                              ? std::optional<std::string>(*it->second.best_point)
                              : std::nullopt});
  }
  for (auto& row : table.rows) {
    if (row.back()) {
      std::string& text = *row.back();
      while (!text.empty() && text.back() == '\n') text.pop_back();
      for (auto& ch : text) {
        if (ch == '\n') ch = ';';
      }
    }
  }
  fmt::print("search {}: {} cells", ctx.spec.name, plan.cells.size());
  for (const auto& [status, n] : counts) fmt::print(", {} {}", n, status);
  fmt::print("\n{}", results::format_table(table));
  return kExitOk;
}

int run_budget_search(const SweepContext& ctx, const sweeps::LocalRunOptions& options,
                      const WorkerChoice& workers) {
  const auto plan = checked_budget_plan(ctx);
  LocalCoordinator coordinator(ctx, options, workers, "search", plan.cells.size());
  BudgetPrinter printer;
  study::ProcessTrialSource source(coordinator.records(), ctx.layout, ctx.spec.name,
                                   coordinator.source_options(), printer);
  study::BudgetEngine engine(plan, coordinator.records().store(), coordinator.records().sweep_id(),
                             source, printer);
  study::BudgetSummary summary;
  {
    StudyStopSignals signals;
    summary = engine.run();
  }
  fmt::print(
      "\nsearch {}: {} cells: {} done, {} failed, {} still searching; {} trial starts now, "
      "{} samples trained in all{}\n",
      ctx.spec.name, summary.cells, summary.done, summary.failed, summary.searching,
      summary.started, summary.samples_trained,
      summary.unfinished > 0 ? fmt::format(", {} trials failed", summary.unfinished) : "");
  if (summary.stopped) fmt::print("stopped early: run the same command again to resume\n");
  std::fflush(stdout);
  return summary.stopped || summary.unfinished > 0 ? kExitFailed : kExitOk;
}

}  // namespace batchlab::cli
