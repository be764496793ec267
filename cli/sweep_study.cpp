#include "cli/sweep_study.h"

#include <fmt/format.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "analysis/study_progress.h"
#include "analysis/table_builder.h"
#include "cli/app.h"
#include "cli/study_printer.h"
#include "cli/study_slurm_jobs.h"
#include "core/config/canonical.h"
#include "core/config/schema.h"
#include "core/errors.h"
#include "results/query_result.h"
#include "sweeps/study/engine.h"
#include "sweeps/study/ladder.h"
#include "sweeps/study/slurm_coordinator.h"
#include "sweeps/study/trial_source.h"
#include "sweeps/sweep_records.h"

namespace batchlab::cli {

namespace {

namespace study = sweeps::study;
using results::ValueType;

std::atomic<int> g_study_stop{0};
extern "C" void on_study_stop_signal(int) { g_study_stop.fetch_add(1); }

std::string describe_cell(const study::StudyPlan& plan, size_t c) {
  return plan.plan->describe(plan.job(c));
}

// Cells by status, trials by outcome, the undecided trials and the cell table.
void print_progress(const study::StudyPlan& plan, const analysis::StudyProgress& progress,
                    const std::set<std::string>& beyond_ladder) {
  std::map<std::string, size_t> cells;
  for (const auto& cell : plan.cells) {
    auto it = progress.cell_status.find(cell.cell_id);
    if (it != progress.cell_status.end()) {
      ++cells[it->second];
    } else {
      ++cells[beyond_ladder.count(cell.cell_id) > 0 ? "beyond the ladder" : "not opened"];
    }
  }
  std::string line;
  for (const auto& [status, n] : cells) line += fmt::format("  {} {}", status, n);
  fmt::print("  cells: {}\n", line);
  line.clear();
  for (const auto& [outcome, n] : progress.trial_outcomes)
    line += fmt::format("  {} {}", outcome, n);
  fmt::print("  trials:{}\n", line.empty() ? " none yet" : line);
  if (!progress.undecided.empty()) fmt::print("undecided trials:\n");
  const auto or_dash = [](const std::optional<int64_t>& v, const char* none) {
    return v ? std::to_string(*v) : std::string(none);
  };
  for (const auto& t : progress.undecided) {
    fmt::print("  {}  lr {}  {}  step {}/{}\n", t.run_id, lr_text(t.base_lr),
               t.run_status.value_or("not started"), or_dash(t.last_step, "-"),
               or_dash(t.total_steps, "?"));
  }
  analysis::TableBuilder b;
  for (const auto& c : progress.cells) {
    b.text("optimizer", c.optimizer);
    b.integer("batch", c.global_batch);
    b.integer("seed", c.seed);
    b.text("status", c.status);
    b.number("best_lr", c.best_lr, "{:.4g}");
    b.number("steps", c.steps_to_target, "{:.1f}");
    b.integer("cap", c.cap_steps);
    b.integer("trials", c.trials);
    b.end_row();
  }
  if (!progress.cells.empty()) fmt::print("\n{}", results::format_table(b.table));
}

void print_summary(const SweepContext& ctx, const study::StudySummary& s) {
  fmt::print(
      "\nstudy {}: {} cells: {} reached, {} censored, {} still searching{}; {} trials ({} "
      "started now{})\n",
      ctx.spec.name, s.cells, s.reached, s.censored, s.searching,
      s.beyond_ladder > 0
          ? fmt::format(", {} beyond where the batch ladder stopped", s.beyond_ladder)
          : "",
      s.trials, s.started, s.unfinished > 0 ? fmt::format(", {} failed", s.unfinished) : "");
  if (s.samples_trained > 0) {
    fmt::print("samples trained {} against {} with every trial run to its cap ({:.1f}x fewer)\n",
               s.samples_trained, s.cap_samples,
               static_cast<double>(s.cap_samples) / static_cast<double>(s.samples_trained));
  }
  if (s.stopped) fmt::print("stopped early: run the same command again to resume\n");
  if (s.unfinished > 0) {
    fmt::print(
        "trials failed: their cells wait; `batchlab sweep status` shows why, and running "
        "the same command again retries them\n");
  }
  std::fflush(stdout);
}

}  // namespace

namespace {

// What the plan printout shows of each cell: its first trial (nullopt where its centre waits for
// another cell) and its status in the results database ("new" when it has none).
struct PlannedCells {
  const study::StudyPlan& plan;
  std::vector<std::optional<sweeps::Job>> firsts;
  std::map<std::string, std::string> recorded;

  std::string centre(size_t c) const {
    if (firsts[c]) return lr_text(firsts[c]->base_lr);
    const auto& st = plan.study();
    if (st.later_seeds != sweeps::LaterSeeds::search && plan.cells[c].first_seed) {
      return fmt::format("seed {}'s best", plan.job(*plan.cells[c].first_seed).seed);
    }
    return fmt::format("best of batch {}", plan.job(*plan.cells[c].previous).global_batch);
  }
  std::string status(size_t c) const {
    auto it = recorded.find(plan.cells[c].cell_id);
    return it == recorded.end() ? std::string("new") : it->second;
  }
};

nlohmann::ordered_json json_or_null(bool present, nlohmann::ordered_json value) {
  return present ? std::move(value) : nlohmann::ordered_json(nullptr);
}

void format_plan_json(const SweepContext& ctx, const PlannedCells& cells, fmt::memory_buffer& out) {
  const auto& plan = cells.plan;
  const auto& st = plan.study();
  nlohmann::ordered_json j = {{"sweep", ctx.spec.name},
                              {"results", ctx.spec.results},
                              {"study",
                               {{"target_metric", st.target.metric},
                                {"target_value", st.target.value},
                                {"lr_factor", st.lr_factor},
                                {"lr_points_max", st.lr_points_max},
                                {"evals_per_octave", st.evals_per_octave}}},
                              {"cells", nlohmann::ordered_json::array()}};
  for (size_t c = 0; c < plan.cells.size(); ++c) {
    const auto& first = cells.firsts[c];
    j["cells"].push_back(
        {{"index", c + 1},
         {"cell_id", plan.cells[c].cell_id},
         {"coordinates", describe_cell(plan, c)},
         {"centre", json_or_null(first.has_value(), first ? first->base_lr : 0.0)},
         {"cap_steps", plan.cells[c].max_cap_steps},
         {"warmup_steps",
          json_or_null(first.has_value(), first ? first->derived.warmup_steps.value_or(0) : 0)},
         {"first_trial", json_or_null(first.has_value(), first ? first->run_id : "")},
         {"status", cells.status(c)}});
  }
  fmt::format_to(std::back_inserter(out), "{}\n", j.dump(1));
}

void format_plan_table(const SweepContext& ctx, const PlannedCells& cells,
                       fmt::memory_buffer& out) {
  const auto& plan = cells.plan;
  results::QueryResult table;
  table.columns = {"#"};
  for (const auto& k : ctx.plan.coordinate_keys) table.columns.push_back(k);
  for (const char* c : {"cell_id", "centre", "cap", "warmup", "first trial", "status"}) {
    table.columns.emplace_back(c);
  }
  for (size_t c = 0; c < plan.cells.size(); ++c) {
    const auto& first = cells.firsts[c];
    std::vector<std::optional<std::string>> row = {std::to_string(c + 1)};
    for (const auto& v : plan.job(c).coordinates) row.emplace_back(v);
    row.emplace_back(plan.cells[c].cell_id);
    row.emplace_back(cells.centre(c));
    row.emplace_back(std::to_string(plan.cells[c].max_cap_steps));
    row.emplace_back(first ? std::to_string(first->derived.warmup_steps.value_or(0)) : "-");
    row.emplace_back(first ? first->run_id : "-");
    row.emplace_back(cells.status(c));
    table.types.emplace_back(row.size(), ValueType::kText);
    table.rows.push_back(std::move(row));
  }
  fmt::format_to(std::back_inserter(out), "{}", results::format_table(table));
}

// The lines under the table: what a cell's search is, then the ladder's and later seeds' rules.
void format_plan_rules(const SweepContext& ctx, const study::StudyPlan& plan,
                       fmt::memory_buffer& out) {
  const auto& st = plan.study();
  fmt::format_to(
      std::back_inserter(out),
      "\n{} cells, each a learning-rate search {} {} (factor {}, at most "
      "{} points, {} evaluations per octave); the first trial of a cell is its "
      "centre; cap in steps (a fit may lower it) -> {} (run folders in {})\n",
      plan.cells.size(),
      st.race ? "raced to" : "without race or pruning (a plain grid: every point runs to)",
      st.target.condition(), st.lr_factor, st.lr_points_max, st.evals_per_octave, ctx.spec.results,
      ctx.spec.runs_dir);
  if (const auto& ladder = st.ladder) {
    fmt::format_to(std::back_inserter(out),
                   "batch ladder: {}..{}, doubling while the steps to target fall by more than "
                   "{:g}x per doubling; it stops after {} doubling(s) in a row below that, at the "
                   "ceiling, {}, and the cells above never open\n",
                   ladder->start, ladder->ceiling, ladder->min_gain, ladder->flat_doublings,
                   ladder->budget_stop && st.max_samples
                       ? "at a censored cell, or before a batch whose cap is below the steps the "
                         "batch under it needed"
                       : "or at a censored cell");
    if (ladder->censored_rungs > 0) {
      fmt::format_to(std::back_inserter(out),
                     "  (a line that has not reached the target yet climbs past up to {} "
                     "censored batch{} first)\n",
                     ladder->censored_rungs, ladder->censored_rungs == 1 ? "" : "es");
    }
  }
  if (st.later_seeds == sweeps::LaterSeeds::rerun_best) {
    fmt::format_to(std::back_inserter(out),
                   "later seeds: one trial at the first seed's best rate at the same batch, its "
                   "neighbours only if it does not reach\n");
  } else if (st.later_seeds == sweeps::LaterSeeds::neighbours) {
    fmt::format_to(std::back_inserter(out),
                   "later seeds: the first seed's best rate at the same batch and its two "
                   "neighbours, no more\n");
  }
}

}  // namespace

int print_study_plan(const SweepContext& ctx, const std::string& format) {
  const auto plan = study::plan_study(ctx.spec, ctx.plan, cli_plan_options());
  const PlannedCells cells{
      plan, study::first_trials(plan),
      analysis::read_study_progress(ctx.spec.results, ctx.plan.sweep_name).cell_status};
  fmt::memory_buffer out;
  if (format == "json") {
    format_plan_json(ctx, cells, out);
  } else {
    format_plan_table(ctx, cells, out);
    format_plan_rules(ctx, plan, out);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

std::set<std::string> cells_beyond_ladder(const study::StudyPlan& plan,
                                          const analysis::StudyProgress& progress) {
  // The stored rows as the engine reads them (analysis/ and sweeps/ may not include each other).
  std::vector<results::StudyCellRow> stored;
  for (const auto& c : progress.cells) {
    results::StudyCellRow row;
    row.cell_id = c.cell_id;
    row.global_batch = c.global_batch;
    row.status = c.status;
    row.steps_to_target = c.steps_to_target;
    stored.push_back(std::move(row));
  }
  return study::cells_beyond_ladder(plan, stored);
}

study::StudyPlan checked_study_plan(const SweepContext& ctx) {
  auto plan = study::plan_study(ctx.spec, ctx.plan, cli_plan_options());
  study::first_trials(
      plan);  // a config the study cannot make is bad input, reported before anything runs
  return plan;
}

std::atomic<int>& study_stop_requests() { return g_study_stop; }

StudyStopSignals::StudyStopSignals() {
  g_study_stop.store(0);
  previous_int_ = std::signal(SIGINT, on_study_stop_signal);
  previous_term_ = std::signal(SIGTERM, on_study_stop_signal);
}

StudyStopSignals::~StudyStopSignals() {
  std::signal(SIGINT, previous_int_);
  std::signal(SIGTERM, previous_term_);
}

int run_study_engine(const SweepContext& ctx, const study::StudyPlan& plan,
                     sweeps::SweepRecords& records, study::TrialSource& source,
                     StudyPrinter& printer) {
  study::StudyEngine engine(plan, records.store(), records.sweep_id(), source, printer);
  study::StudySummary summary;
  {
    StudyStopSignals signals;
    summary = engine.run();
  }
  print_summary(ctx, summary);
  return summary.stopped || summary.unfinished > 0 ? kExitFailed : kExitOk;
}

namespace {

// The coordinator lock, taken before anything else: nothing is recorded while another holds it.
sweeps::FileLock lock_out_other_coordinators(const SweepContext& ctx) {
  auto lock = coordinator_lock(ctx, "run");
  if (const auto job = study::live_coordinator(ctx.layout, ctx.spec.name); !job.empty()) {
    throw Error(fmt::format(
        "study {}: its coordinator is queued or running as Slurm job {} (sweep submit --slurm); a "
        "local run beside it would start trials its jobs run; wait for it (`batchlab sweep "
        "status`) or cancel it with `scancel {}` first",
        ctx.spec.name, job, job));
  }
  return lock;
}

}  // namespace

LocalCoordinator::LocalCoordinator(const SweepContext& ctx, const sweeps::LocalRunOptions& options,
                                   const WorkerChoice& workers, const std::string& kind,
                                   size_t cells)
    : lock_(lock_out_other_coordinators(ctx)), records_(ctx.spec, ctx.layout) {
  records_.register_plan(ctx.spec, sweeps::Plan{});  // the sweeps row; trials come as decided
  source_options_.run = options;
  source_options_.run.workers = workers.workers;
  source_options_.run.stop_requests = &g_study_stop;
  fmt::print("{} {}: {} cells -> {} (runs in {}), {}\n", kind, ctx.spec.name, cells,
             ctx.spec.results, ctx.spec.runs_dir, workers.describe());
  std::fflush(stdout);
}

int run_study(const SweepContext& ctx, const sweeps::LocalRunOptions& options,
              const WorkerChoice& workers) {
  const auto plan = checked_study_plan(ctx);
  LocalCoordinator coordinator(ctx, options, workers, "study", plan.cells.size());
  StudyPrinter printer(plan);
  study::ProcessTrialSource source(coordinator.records(), ctx.layout, ctx.spec.name,
                                   coordinator.source_options(), printer);
  return run_study_engine(ctx, plan, coordinator.records(), source, printer);
}

int print_study_status(const SweepContext& ctx) {
  const auto plan = study::plan_study(ctx.spec, ctx.plan, cli_plan_options());
  std::error_code ec;
  const std::string& db = ctx.spec.results;
  fmt::print("study {}: {} cells -> {}\n", ctx.spec.name, plan.cells.size(), db);
  if (!std::filesystem::exists(db, ec)) {
    fmt::print("  not started\n");
    return kExitOk;
  }
  // Fold what trials left behind when no coordinator runs: its lock says so, and for a Slurm-run
  // study the queue too (the coordinator's host may not share this host's file locks), whose
  // database is its published snapshot, overwritten by its next publication.
  const std::string slurm_coordinator = study::live_coordinator(ctx.layout, ctx.spec.name);
  if (!slurm_coordinator.empty()) {
    fmt::print("  (its coordinator is Slurm job {}: this is its last published database)\n",
               slurm_coordinator);
  } else if (std::filesystem::exists(ctx.layout.root(), ec)) {
    if (auto lock = try_coordinator_lock(ctx.layout, "status")) {
      sweeps::SweepRecords records(ctx.spec, ctx.layout);
      sweeps::Plan trials;
      for (const auto& t : records.store().read_study_trials(ctx.spec.name)) {
        sweeps::Job job;
        job.run_id = t.run_id;
        trials.jobs.push_back(job);
      }
      // Trials queued or running in Slurm are folded as they are (their jobs publish records).
      records.reconcile(trials, study::trials_in_slurm(ctx.layout, ctx.spec.name));
    } else {
      fmt::print("  (a coordinator is active: {})\n",
                 sweeps::lock_description(ctx.layout.coordinator_lock_path()));
    }
  }
  print_study_slurm_jobs(ctx);
  const auto progress = analysis::read_study_progress(db, ctx.spec.name);
  print_progress(plan, progress, cells_beyond_ladder(plan, progress));
  return kExitOk;
}

}  // namespace batchlab::cli
