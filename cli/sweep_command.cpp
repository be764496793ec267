// `batchlab sweep plan|run|status|submit`: dispatch, and the Slurm subcommands.
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "cli/app.h"
#include "cli/args.h"
#include "cli/sweep_commands.h"
#include "cli/sweep_context.h"
#include "cli/sweep_study_slurm.h"
#include "core/errors.h"
#include "sweeps/scratch_dir.h"
#include "sweeps/slurm.h"
#include "sweeps/slurm_check.h"
#include "sweeps/slurm_task.h"
#include "sweeps/sweep_records.h"

namespace batchlab::cli {

namespace {

constexpr const char* kSweepUsage =
    "batchlab sweep <plan|run|status|submit|simulate|cost> SWEEP.toml [options]\n"
    "  plan SWEEP.toml [--format table|json]                 expand and validate, run nothing\n"
    "  run SWEEP.toml [--workers N] [--devices LIST] [--retries K]\n"
    "                                                        run what is missing, locally\n"
    "                                                        (default N: cores / train.threads)\n"
    "  status SWEEP.toml                                     counts, progress, failures\n"
    "  submit SWEEP.toml --slurm [--partition P] [--time T] [--gpus-per-job G]\n"
    "         [--max-parallel M] [--cpus-per-task C] [--sbatch-arg ARG]... [--dry-run]\n"
    "                                                        one Slurm job array; a study's\n"
    "                                                        coordinator as a Slurm job\n"
    "  simulate STUDY.toml --from DB [--workers 2,8,64]      a study's makespan under both\n"
    "                                                        trial orders, replayed from DB\n"
    "  cost STUDY.toml --from PLAIN.db [--workers N]         the search rules' samples and time\n"
    "                                                        against a plain grid's recording\n"
    "A spec with a [study] section is a scaling study: plan shows its cells and first trials, run\n"
    "searches each cell's learning rate raced to the target, status shows cells and trials\n"
    "(docs/sweeps.md). Run `batchlab sweep <subcommand> --help` for its options.";

constexpr const char* kSubmitUsage =
    "batchlab sweep submit SWEEP.toml --slurm [--partition P] [--time T] [--gpus-per-job G]\n"
    "       [--max-parallel M] [--cpus-per-task C] [--ranks-per-job R] [--nodes-per-job N]\n"
    "       [--sbatch-arg ARG]... [--dry-run]\n"
    "  --gpus-per-job G: GPUs per node; --ranks-per-job R: R data-parallel ranks per job, started\n"
    "  by srun (on N nodes with --nodes-per-job); --cpus-per-task C: per rank\n"
    "  a sweep: one job array of the jobs still to run (M at once; no limit when not given)\n"
    "  a study ([study]): its coordinator as one Slurm job, every trial a job of its own with\n"
    "  these resources (M trials queued at once, default 16), and for a study only:\n"
    "    --coordinator-time T   the coordinator job's --time (it lasts the whole study)\n"
    "    --retries K            submit a trial that crashed again, K times (default 0)\n"
    "    --snapshot-every S     seconds between a job's published records (default 10; a plain\n"
    "                           sweep's tasks too)\n"
    "    --publish-every S      seconds between the coordinator's published database (default 30)\n"
    "  Every option is checked with `sbatch --test-only` before anything is submitted.";

std::atomic<int> g_task_stop{0};
extern "C" void on_task_signal(int) { g_task_stop.fetch_add(1); }

}  // namespace

int cmd_sweep(const std::vector<std::string>& argv) {
  const std::string& sub = subcommand(argv, kSweepUsage);
  const std::vector<std::string> rest(argv.begin() + 1, argv.end());
  if (sub == "plan") return cmd_sweep_plan(rest);
  if (sub == "run") return cmd_sweep_run(rest);
  if (sub == "status") return cmd_sweep_status(rest);
  if (sub == "submit") return cmd_sweep_submit(rest);
  if (sub == "simulate") return cmd_sweep_simulate(rest);
  if (sub == "cost") return cmd_sweep_cost(rest);
  if (sub == "slurm-task") return cmd_sweep_slurm_task(rest);
  if (sub == "slurm-coordinator") return cmd_sweep_slurm_coordinator(rest);
  throw UsageError(fmt::format("unknown sweep subcommand '{}'\nusage: {}", sub, kSweepUsage));
}

int cmd_sweep_submit(const std::vector<std::string>& argv) {
  Args args(argv, slurm_submit_options(), kSubmitUsage);
  const std::string spec_path = args.positional("SWEEP.toml");
  if (!args.flag("slurm")) {
    throw UsageError("name the scheduler: --slurm (the only one supported)\nusage: " +
                     args.usage());
  }
  std::vector<std::string> study_flags;
  auto settings = slurm_submit_settings(args, &study_flags);
  const bool dry_run = args.flag("dry-run");
  auto ctx = load_sweep(spec_path, /*keep_config_toml=*/true);
  int64_t threads = 0;
  for (const auto& job : ctx.plan.jobs) threads = std::max(threads, job.threads);
  if (settings.jobs.cpus_per_task == 0) settings.jobs.cpus_per_task = static_cast<int>(threads);
  if (ctx.spec.study) return submit_study_slurm(ctx, spec_path, settings, dry_run);
  if (ctx.spec.search) {
    throw UsageError(fmt::format(
        "{}: a fixed-budget search ([search]) runs its coordinator locally: `batchlab sweep run "
        "{}` (its trials climb rung by rung from checkpoints, which a Slurm submission does not "
        "yet do)",
        spec_path, spec_path));
  }
  if (!study_flags.empty()) {
    throw UsageError(fmt::format("{}: only for a study ([study]); {} is a plain sweep\nusage: {}",
                                 study_flags.front(), spec_path, args.usage()));
  }
  check_jobs_for_ranks(ctx, settings.jobs.ranks_per_job);
  sweeps::SlurmOptions options = settings.jobs;
  options.batchlab = self_executable();
  options.snapshot_every = settings.snapshot_every;
  options.submit = !dry_run;
  // Before anything is recorded: a refused option is bad input with nothing submitted.
  if (!dry_run) sweeps::check_slurm_resources(options, "the sweep's array");
  const auto lock = coordinator_lock(ctx, "submit");
  sweeps::SweepRecords records(ctx.spec, ctx.layout);
  records.register_plan(ctx.spec, ctx.plan);
  const auto submitted = sweeps::slurm_submitted_runs(ctx.layout);
  std::set<std::string> active;
  if (!submitted.empty()) {
    auto asked = sweeps::slurm_active_runs(ctx.layout, ctx.spec.name);
    active = asked ? *asked : submitted;
  }
  const auto alive = records.reconcile(ctx.plan, active);
  const auto runs = records.runs();
  std::vector<const sweeps::Job*> pending;
  size_t settled = 0;
  for (const auto& job : ctx.plan.jobs) {
    auto it = runs.find(job.run_id);
    if (it != runs.end() && sweeps::is_settled(it->second.status)) {
      ++settled;
    } else if (active.count(job.run_id) == 0 && alive.count(job.run_id) == 0) {
      ctx.layout.write_config(job.run_id, job.config_toml);
      pending.push_back(&job);
    }
  }
  if (pending.empty()) {
    fmt::print("sweep {}: nothing to submit ({} settled, {} queued or running)\n", ctx.spec.name,
               settled, ctx.plan.jobs.size() - settled);
    return kExitOk;
  }
  const auto submission = sweeps::submit_array(ctx.spec.name, pending, ctx.layout, options);
  for (size_t i = 0; i < pending.size() && !submission.job_id.empty(); ++i) {
    records.store().set_scheduler_job(pending[i]->run_id,
                                      fmt::format("{}_{}", submission.job_id, i));
  }
  if (submission.job_id.empty()) {
    fmt::print("sweep {}: wrote {} ({} tasks, task list {}); not submitted (--dry-run)\n",
               ctx.spec.name, submission.script, submission.task_count, submission.tasks);
  } else {
    fmt::print(
        "sweep {}: submitted Slurm job {} with {} array tasks ({} settled already)\n"
        "  script {}\n  `batchlab sweep status {}` folds their records into {}\n",
        ctx.spec.name, submission.job_id, submission.task_count, settled, submission.script,
        spec_path, ctx.spec.results);
  }
  return kExitOk;
}

int cmd_sweep_slurm_task(const std::vector<std::string>& argv) {
  Args args(argv, {{"snapshot-every", true, false}, {"ranks", true, false}},
            "batchlab sweep slurm-task TASKS_FILE INDEX [--snapshot-every SECONDS] [--ranks R]");
  if (args.positionals().size() != 2) throw UsageError("usage: " + args.usage());
  size_t index = 0;
  try {
    index = std::stoul(args.positionals()[1]);
  } catch (const std::exception&) {
    throw UsageError(
        fmt::format("INDEX {}: not a number\nusage: {}", args.positionals()[1], args.usage()));
  }
  // The job's records on the node's own disk, in a folder no other task or coordinator shares.
  const sweeps::ScratchDir local(fmt::format("task{}", index));
  std::signal(SIGTERM, on_task_signal);
  std::signal(SIGINT, on_task_signal);
  const int code =
      sweeps::run_slurm_task(self_executable(), args.positionals()[0], index, local.path(),
                             std::chrono::seconds(args.integer("snapshot-every").value_or(30)),
                             &g_task_stop, static_cast<int>(args.integer("ranks").value_or(1)));
  return code == 0 ? kExitOk : kExitFailed;
}

}  // namespace batchlab::cli
