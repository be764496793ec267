// `batchlab sweep run SWEEP.toml [--workers N] [--devices LIST] [--retries K]`: runs every job of
// the spec that is not done or diverged yet, N at a time, each as its own `batchlab train`
// process, folds their records into the sweep database and ends with the results table.
// Ctrl-C (or SIGTERM) once: the workers stop gracefully and record `preempted`; twice: killed.
#include <fmt/format.h>

#include <atomic>
#include <csignal>
#include <cstdio>

#include "cli/app.h"
#include "cli/args.h"
#include "cli/sweep_budget.h"
#include "cli/sweep_commands.h"
#include "cli/sweep_context.h"
#include "cli/sweep_report.h"
#include "cli/sweep_study.h"
#include "cli/sweep_workers.h"
#include "core/errors.h"
#include "sweeps/local_runner.h"
#include "sweeps/sweep_records.h"

namespace batchlab::cli {

namespace {

std::atomic<int> g_stop_requests{0};

extern "C" void on_sweep_stop_signal(int) { g_stop_requests.fetch_add(1); }

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

class PrintingObserver : public sweeps::RunObserver {
 public:
  PrintingObserver(const sweeps::Plan& plan, sweeps::SweepRecords& records)
      : plan_(plan), records_(records) {}

  void started(const sweeps::JobEvent& e) override {
    fmt::print("[{}] start     {}  {}  (worker {}{})\n", position(e), e.job->run_id,
               plan_.describe(*e.job), e.worker,
               e.attempt > 1 ? fmt::format(", attempt {}", e.attempt) : "");
    std::fflush(stdout);
  }

  void finished(const sweeps::JobEvent& e) override {
    std::string detail;
    if (e.status == "done" || e.status == "diverged") {
      auto evals = records_.store().read_evals(e.job->run_id);
      if (!evals.empty() && evals.back().test_acc) {
        detail = fmt::format("  test_acc {:.4f}", *evals.back().test_acc);
      }
    }
    if (!e.error.empty() && e.status != "done") detail += "  " + e.error;
    if (e.retry) detail += "  -> retrying";
    fmt::print("[{}] {:<9} {}  {}  {}{}\n", position(e), e.status, e.job->run_id,
               plan_.describe(*e.job), format_seconds(e.seconds), detail);
    std::fflush(stdout);
  }

  void stopping(int level) override {
    // Two fixed messages (fmt checks a format string at compile time, so no ?: between them).
    if (level == 1) {
      fmt::print(
          "stopping: asking the running jobs to stop (they record preempted); press "
          "Ctrl-C again to kill them\n");
    } else {
      fmt::print("killing the running jobs\n");
    }
    std::fflush(stdout);
  }

 private:
  std::string position(const sweeps::JobEvent& e) const {
    const size_t index = static_cast<size_t>(e.job - plan_.jobs.data()) + 1;
    const size_t width = std::to_string(plan_.jobs.size()).size();
    return fmt::format("{:>{}}/{}", index, width, plan_.jobs.size());
  }

  const sweeps::Plan& plan_;
  sweeps::SweepRecords& records_;
};

}  // namespace

int cmd_sweep_run(const std::vector<std::string>& argv) {
  Args args(argv, {{"workers", true, false}, {"devices", true, false}, {"retries", true, false}},
            "batchlab sweep run SWEEP.toml [--workers N] [--devices LIST] [--retries K]\n"
            "  --workers N   jobs at once (default: one per device of --devices, else the cores\n"
            "                divided by the jobs' train.threads, at least 1)");
  const std::string spec_path = args.positional("SWEEP.toml");
  sweeps::LocalRunOptions options;
  options.devices = split_list(args.value("devices").value_or(""));
  const auto asked_workers = args.integer("workers");
  const long long retries = args.integer("retries").value_or(0);
  // Upper bounds too: each worker is a training process, and every retry a launch.
  constexpr long long kMaxSweepWorkers = 1024;
  constexpr long long kMaxRetries = 100;
  if (asked_workers && (*asked_workers < 1 || *asked_workers > kMaxSweepWorkers)) {
    throw UsageError(fmt::format(
        "--workers {}: must be between 1 and {} (each worker is a training process; the default "
        "is the cores divided by the jobs' train.threads)",
        *asked_workers, kMaxSweepWorkers));
  }
  if (retries < 0 || retries > kMaxRetries) {
    throw UsageError(fmt::format("--retries {}: must be between 0 and {}", retries, kMaxRetries));
  }
  if (asked_workers && !options.devices.empty() &&
      static_cast<size_t>(*asked_workers) > options.devices.size()) {
    throw UsageError(fmt::format(
        "--workers {} with {} devices: each worker needs its own device (list a device twice to "
        "share it, e.g. --devices 0,0,1,1)",
        *asked_workers, options.devices.size()));
  }
  options.retries = static_cast<int>(retries);
  options.batchlab = self_executable();
  options.stop_requests = &g_stop_requests;

  auto ctx = load_sweep(spec_path, /*keep_config_toml=*/true);
  // The default depends on the jobs' train.threads, known once the spec is expanded.
  const WorkerChoice workers =
      choose_workers(asked_workers, ctx.plan, options.devices.size(), hardware_cores());
  options.workers = workers.workers;
  if (ctx.spec.study) return run_study(ctx, options, workers);
  if (ctx.spec.search) return run_budget_search(ctx, options, workers);
  const auto lock = coordinator_lock(ctx, "run");
  sweeps::SweepRecords records(ctx.spec, ctx.layout);
  records.register_plan(ctx.spec, ctx.plan);
  fmt::print("sweep {}: {} jobs -> {} (runs in {}), {}{}\n", ctx.spec.name, ctx.plan.jobs.size(),
             ctx.spec.results, ctx.spec.runs_dir, workers.describe(),
             options.devices.empty() ? "" : ", devices " + args.value("devices").value_or(""));
  std::fflush(stdout);

  g_stop_requests.store(0);
  auto previous_int = std::signal(SIGINT, on_sweep_stop_signal);
  auto previous_term = std::signal(SIGTERM, on_sweep_stop_signal);
  PrintingObserver observer(ctx.plan, records);
  sweeps::RunSummary summary;
  try {
    summary = sweeps::run_local(ctx.plan, records, ctx.layout, options, observer);
  } catch (...) {
    std::signal(SIGINT, previous_int);
    std::signal(SIGTERM, previous_term);
    throw;
  }
  std::signal(SIGINT, previous_int);
  std::signal(SIGTERM, previous_term);

  fmt::print(
      "\nsweep {}: {} already settled, {} to run: {} done, {} diverged, {} failed, {} "
      "preempted{}\n",
      ctx.spec.name, summary.settled, summary.queued, summary.done, summary.diverged,
      summary.failed, summary.preempted,
      summary.stopped ? " (stopped early; run the same command again to resume)" : "");
  const std::string report = sweep_report(ctx.spec.results, ctx.plan);
  if (!report.empty()) fmt::print("\n{}", report);
  std::fflush(stdout);
  return summary.stopped || summary.failed > 0 || summary.preempted > 0 ? kExitFailed : kExitOk;
}

}  // namespace batchlab::cli
