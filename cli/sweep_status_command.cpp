// `batchlab sweep status SWEEP.toml`: counts by status, running jobs with their progress, failed
// jobs with the tail of their error. When no coordinator is running it first folds every job's
// records (local runs and Slurm snapshots) into the sweep database, taking the coordinator lock
// for that; while `sweep run` is active it only reads what that coordinator keeps up to date.
#include <fmt/format.h>

#include <filesystem>
#include <map>

#include "cli/app.h"
#include "cli/args.h"
#include "cli/sweep_budget.h"
#include "cli/sweep_commands.h"
#include "cli/sweep_context.h"
#include "cli/sweep_report.h"
#include "cli/sweep_study.h"
#include "results/query.h"
#include "sweeps/process.h"
#include "sweeps/slurm.h"
#include "sweeps/sweep_records.h"

namespace batchlab::cli {

namespace {

struct RunState {
  std::string status = "planned";
  std::optional<std::string> attempts;
  std::optional<std::string> last_step;
  std::optional<std::string> total_steps;
  std::optional<std::string> error;
};

std::string indent(const std::string& text, const std::string& prefix) {
  std::string out = prefix;
  for (char c : text) {
    out += c;
    if (c == '\n') out += prefix;
  }
  return out;
}

}  // namespace

int cmd_sweep_status(const std::vector<std::string>& argv) {
  Args args(argv, {}, "batchlab sweep status SWEEP.toml");
  const auto ctx = load_sweep(args.positional("SWEEP.toml"), /*keep_config_toml=*/false);
  if (ctx.spec.study) return print_study_status(ctx);
  if (ctx.spec.search) return print_budget_status(ctx);
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool have_runs = fs::exists(ctx.layout.root(), ec);

  std::string note;
  size_t slurm_active = 0;
  // Without run folders there is nothing to fold (and no lock file is created).
  std::optional<sweeps::FileLock> lock;
  if (have_runs) lock = try_coordinator_lock(ctx.layout, "status");
  if (lock) {
    const auto submitted = sweeps::slurm_submitted_runs(ctx.layout);
    std::set<std::string> external;
    if (!submitted.empty()) {
      auto active = sweeps::slurm_active_runs(ctx.layout, ctx.spec.name);
      external = active ? *active : submitted;
      slurm_active = external.size();
    }
    sweeps::SweepRecords records(ctx.spec, ctx.layout);
    records.reconcile(ctx.plan, external);
  } else if (have_runs) {
    note = fmt::format("(a coordinator is active: {}; showing the records it has folded so far)\n",
                       sweeps::lock_description(ctx.layout.coordinator_lock_path()));
  }

  std::map<std::string, RunState> states;
  if (fs::exists(ctx.spec.results, ec)) {
    const auto result = results::query_readonly(ctx.spec.results,
                                                "SELECT run_id, status, attempts, last_step, "
                                                "total_steps, error FROM runs WHERE sweep_id = ?",
                                                {ctx.plan.sweep_name});
    for (const auto& row : result.rows) {
      states[row[0].value_or("")] = RunState{row[1].value_or("?"), row[2], row[3], row[4], row[5]};
    }
  }
  std::map<std::string, size_t> counts;
  std::vector<const sweeps::Job*> running, failed;
  for (const auto& job : ctx.plan.jobs) {
    const auto& state = states[job.run_id];
    ++counts[state.status];
    if (state.status == "running") running.push_back(&job);
    if (state.status == "failed") failed.push_back(&job);
  }
  fmt::print("sweep {}: {} jobs -> {}\n{}", ctx.spec.name, ctx.plan.jobs.size(), ctx.spec.results,
             note);
  std::string line;
  for (const char* status : {"done", "diverged", "running", "preempted", "failed", "planned"}) {
    line += fmt::format("{}{} {}", line.empty() ? "" : "  ", status, counts[status]);
    counts.erase(status);
  }
  for (const auto& [status, n] : counts) line += fmt::format("  {} {}", status, n);
  fmt::print("  {}\n", line);
  if (slurm_active > 0) fmt::print("  {} job(s) queued or running in Slurm\n", slurm_active);

  if (!running.empty()) fmt::print("running:\n");
  for (const auto* job : running) {
    const auto& s = states[job->run_id];
    std::string progress = "starting";
    if (s.last_step) {
      progress = fmt::format("step {}", std::stoll(*s.last_step) + 1);
      if (s.total_steps && std::stoll(*s.total_steps) > 0) {
        const double total = std::stod(*s.total_steps);
        progress += fmt::format("/{} ({:.0f}%)", *s.total_steps,
                                100.0 * (std::stod(*s.last_step) + 1) / total);
      }
    }
    fmt::print("  {}  {}  {}  attempt {}\n", job->run_id, ctx.plan.describe(*job), progress,
               s.attempts.value_or("?"));
  }
  if (!failed.empty()) fmt::print("failed:\n");
  for (const auto* job : failed) {
    const auto& s = states[job->run_id];
    fmt::print("  {}  {}  after {} attempt(s): {}\n", job->run_id, ctx.plan.describe(*job),
               s.attempts.value_or("?"), s.error.value_or("(no error recorded)"));
    const std::string tail = sweeps::tail_lines(ctx.layout.log_path(job->run_id), 5);
    if (!tail.empty()) fmt::print("{}\n", indent(tail, "      | "));
  }
  const auto stale = stale_runs(ctx.plan, recorded_statuses(ctx.spec.results, ctx.plan.sweep_name));
  if (!stale.empty()) {
    fmt::print(
        "{} recorded run(s) of this sweep no longer belong to the spec (`sweep plan` lists "
        "them)\n",
        stale.size());
  }
  const std::string report = sweep_report(ctx.spec.results, ctx.plan);
  if (!report.empty()) fmt::print("\n{}", report);
  return kExitOk;
}

}  // namespace batchlab::cli
