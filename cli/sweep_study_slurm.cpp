#include "cli/sweep_study_slurm.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "analysis/study_progress.h"
#include "cli/app.h"
#include "cli/study_printer.h"
#include "cli/sweep_study.h"
#include "core/atomic_file.h"
#include "core/config/loader.h"
#include "core/errors.h"
#include "sweeps/slurm_check.h"
#include "sweeps/slurm_commands.h"
#include "sweeps/study/slurm_coordinator.h"
#include "sweeps/study/slurm_source.h"
#include "sweeps/sweep_records.h"

namespace batchlab::cli {

namespace {

namespace fs = std::filesystem;
namespace study = sweeps::study;

constexpr const char* kCoordinatorUsage =
    "batchlab sweep slurm-coordinator STUDY.toml [the options of `sweep submit --slurm`]";

// How long a coordinator job waits for the coordinator lock: the `sweep submit` that submitted it
// holds the lock until it has recorded the job, which may start before that.
constexpr std::chrono::seconds kLockWait{60};

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

// Cells of the plan not yet complete in the (published) database.
size_t cells_to_finish(const SweepContext& ctx, const study::StudyPlan& plan) {
  const auto progress = analysis::read_study_progress(ctx.spec.results, ctx.spec.name);
  const auto& status = progress.cell_status;
  const auto beyond = cells_beyond_ladder(plan, progress);
  size_t open = 0;
  for (const auto& cell : plan.cells) {
    auto it = status.find(cell.cell_id);
    if (it == status.end()) {
      open += beyond.count(cell.cell_id) > 0 ? 0 : 1;
    } else {
      open += it->second == results::cell_status::kSearching ? 1 : 0;
    }
  }
  return open;
}

sweeps::FileLock wait_for_coordinator_lock(const SweepContext& ctx) {
  const auto deadline = std::chrono::steady_clock::now() + kLockWait;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto lock = try_coordinator_lock(ctx.layout, "slurm-coordinator")) return std::move(*lock);
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  return coordinator_lock(ctx, "slurm-coordinator");
}

// Submits the coordinator job and records it, under the lock (the header says why).
int submit_coordinator(const SweepContext& ctx, const std::string& spec_path,
                       const study::CoordinatorJob& job, size_t cells) {
  const auto lock = coordinator_lock(ctx, "submit");
  if (const auto live = study::live_coordinator(ctx.layout, ctx.spec.name); !live.empty()) {
    fmt::print(
        "study {}: its coordinator is queued or running as Slurm job {}; nothing to "
        "submit (`batchlab sweep status {}` shows its progress)\n",
        ctx.spec.name, live, spec_path);
    return kExitOk;
  }
  fs::create_directories(ctx.layout.slurm_dir());
  const std::string script = (fs::path(ctx.layout.slurm_dir()) / "coordinator.sbatch").string();
  write_file_atomically(script, study::coordinator_script(ctx.layout, job));
  const std::string id = sweeps::sbatch_submit(script, sweeps::default_retry_policy());
  study::record_coordinator_job(ctx.layout, id);
  fmt::print(
      "study {}: submitted its coordinator as Slurm job {} ({} cells; every trial is a Slurm job "
      "of its own)\n  script {}\n  output {}/coordinator-{}.out\n  `batchlab sweep status {}` "
      "shows the cells, trials and Slurm jobs; the database is published to {}\n",
      ctx.spec.name, id, cells, script, ctx.layout.slurm_dir(), id, spec_path, ctx.spec.results);
  return kExitOk;
}

}  // namespace

std::vector<OptionSpec> slurm_submit_options() {
  std::vector<OptionSpec> out;
  for (const auto& flag : sweeps::slurm_flags()) {
    out.push_back({flag.name, flag.takes_value, flag.repeatable});
  }
  return out;
}

SlurmSubmitSettings slurm_submit_settings(const Args& args, std::vector<std::string>* study_flags) {
  std::map<std::string, std::vector<std::string>> given;
  for (const auto& flag : sweeps::slurm_flags()) {
    if (!flag.takes_value) continue;
    auto values = args.values(flag.name);
    if (values.empty()) continue;
    if (flag.study_only && study_flags != nullptr) {
      study_flags->push_back(fmt::format("--{}", flag.name));
    }
    given.emplace(flag.name, std::move(values));
  }
  std::vector<std::string> problems;
  auto settings = sweeps::parse_slurm_flags(given, &problems);
  if (!problems.empty()) {
    std::string text;
    for (const auto& p : problems) text += (text.empty() ? "" : "\n") + p;
    throw UsageError(fmt::format("{}\nusage: {}", text, args.usage()));
  }
  return settings;
}

void check_jobs_for_ranks(const SweepContext& ctx, int ranks) {
  if (ranks <= 1) return;
  config::LoadOptions options = cli_plan_options().load;
  options.world_size = ranks;
  options.read_init_file = false;
  std::string problems;
  for (const auto& job : ctx.plan.jobs) {
    try {
      config::parse_experiment(job.config_toml, ctx.layout.config_path(job.run_id), options);
    } catch (const ConfigError& e) {
      problems += fmt::format("\n  {} ({}): {}", job.run_id, ctx.plan.describe(job), e.what());
    }
  }
  if (problems.empty()) return;
  throw InputError(fmt::format("--ranks-per-job {}: jobs of {} cannot be split over {} ranks:{}",
                               ranks, ctx.spec.source, ranks, problems));
}

int submit_study_slurm(const SweepContext& ctx, const std::string& spec_path,
                       const SlurmSubmitSettings& settings, bool dry_run) {
  const auto plan = checked_study_plan(ctx);
  check_jobs_for_ranks(ctx, settings.jobs.ranks_per_job);
  if (const size_t open = cells_to_finish(ctx, plan); open == 0) {
    fmt::print("study {}: nothing to submit: all {} cells are complete in {}\n", ctx.spec.name,
               plan.cells.size(), ctx.spec.results);
    return kExitOk;
  }
  study::CoordinatorJob job{ctx.spec.name, fs::absolute(spec_path).string(),
                            fs::absolute(ctx.spec.results).string(), self_executable(), settings};
  if (dry_run) {
    fs::create_directories(ctx.layout.slurm_dir());
    const std::string script = (fs::path(ctx.layout.slurm_dir()) / "coordinator.sbatch").string();
    write_file_atomically(script, study::coordinator_script(ctx.layout, job));
    fmt::print("study {}: wrote {} ({} cells); not submitted (--dry-run)\n", ctx.spec.name, script,
               plan.cells.size());
    return kExitOk;
  }
  // Before anything is recorded: a refused option or a down partition is bad input.
  sweeps::check_slurm_resources(settings.jobs, "the study's trial jobs");
  sweeps::check_slurm_resources(study::coordinator_options(settings),
                                "the study's coordinator job");
  return submit_coordinator(ctx, spec_path, job, plan.cells.size());
}

int cmd_sweep_slurm_coordinator(const std::vector<std::string>& argv) {
  Args args(argv, slurm_submit_options(), kCoordinatorUsage);
  const std::string spec_path = args.positional("STUDY.toml");
  auto settings = slurm_submit_settings(args, nullptr);
  auto ctx = load_sweep(spec_path, /*keep_config_toml=*/true);
  if (!ctx.spec.study) throw UsageError(fmt::format("{}: not a study ([study])", spec_path));
  const auto plan = checked_study_plan(ctx);
  const auto lock = wait_for_coordinator_lock(ctx);
  const std::string self = env_or_empty("SLURM_JOB_ID");
  if (const auto other = study::live_coordinator(ctx.layout, ctx.spec.name, self); !other.empty()) {
    throw Error(
        fmt::format("study {}: Slurm job {} coordinates it already; this coordinator ({}) "
                    "ends without touching it",
                    ctx.spec.name, other, self.empty() ? "?" : self));
  }
  const study::PublishedDatabase db(ctx.spec.results);
  ctx.spec.results = db.local();
  sweeps::SweepRecords records(ctx.spec, ctx.layout);
  records.register_plan(ctx.spec, sweeps::Plan{});
  db.publish();
  fmt::print("study {}: coordinator (Slurm job {}) on {} cells, database {} published to {}\n",
             ctx.spec.name, self.empty() ? "?" : self, plan.cells.size(), db.local(), db.shared());
  std::fflush(stdout);

  study::SlurmSourceOptions options;
  options.slurm = settings.jobs;
  options.slurm.batchlab = self_executable();
  options.slurm.snapshot_every = settings.snapshot_every;
  options.max_jobs = settings.jobs.max_parallel > 0 ? settings.jobs.max_parallel
                                                    : sweeps::kDefaultStudyMaxParallel;
  options.slurm.max_parallel = 0;  // one job per trial: the source limits how many are queued
  options.retries = settings.retries;
  options.max_attempts = settings.max_attempts;
  options.stop_requests = &study_stop_requests();
  options.publish_interval = std::chrono::seconds(settings.publish_every);
  options.publish = [&db] { db.publish(); };
  StudyPrinter printer(plan, /*in_slurm=*/true);
  study::SlurmTrialSource source(records, ctx.layout, ctx.spec.name, options, printer);
  int code = kExitFailed;
  try {
    code = run_study_engine(ctx, plan, records, source, printer);
  } catch (...) {
    db.publish();
    throw;
  }
  db.publish();
  if (source.fatal()) throw Error(fmt::format("study {}: {}", ctx.spec.name, *source.fatal()));
  return code;
}

}  // namespace batchlab::cli
