#include "cli/sweep_study_slurm.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "analysis/study_progress.h"
#include "cli/app.h"
#include "cli/study_printer.h"
#include "cli/sweep_study.h"
#include "core/config/loader.h"
#include "core/errors.h"
#include "results/ingest.h"
#include "sweeps/process.h"
#include "sweeps/slurm_check.h"
#include "sweeps/study_slurm_source.h"
#include "sweeps/sweep_records.h"

namespace batchlab::cli {

namespace {

namespace fs = std::filesystem;
namespace study = sweeps::study;

constexpr const char* kCoordinatorUsage =
    "batchlab sweep slurm-coordinator STUDY.toml [the options of `sweep submit --slurm`]";
constexpr int kMaxSeconds = 24 * 3600;

std::string coordinator_job_name(const std::string& sweep_name) {
  return "batchlab-" + sweep_name + "-coordinator";
}

std::string coordinator_record(const SweepContext& ctx) {
  return (fs::path(ctx.layout.slurm_dir()) / "coordinator.txt").string();
}

// The coordinator jobs submitted for this study, oldest first.
std::vector<std::string> coordinator_jobs(const SweepContext& ctx) {
  std::vector<std::string> ids;
  std::ifstream in(coordinator_record(ctx));
  std::string id;
  while (in >> id) ids.push_back(id);
  return ids;
}

}  // namespace

std::string live_study_coordinator(const SweepContext& ctx) {
  const auto ids = coordinator_jobs(ctx);
  if (ids.empty()) return "";
  const auto queue = sweeps::slurm_queue({coordinator_job_name(ctx.spec.name)});
  if (!queue) return ids.back();
  for (const auto& entry : *queue) {
    if (std::find(ids.begin(), ids.end(), entry.job_id) != ids.end()) return entry.job_id;
  }
  return "";
}

namespace {

// The words that hand `settings` to the coordinator job (parsed back by slurm_submit_settings).
std::vector<std::string> coordinator_words(const SlurmSubmitSettings& s) {
  std::vector<std::string> words;
  auto add = [&](const char* flag, const std::string& value) {
    words.push_back(flag);
    words.push_back(value);
  };
  if (!s.jobs.partition.empty()) add("--partition", s.jobs.partition);
  if (!s.jobs.time.empty()) add("--time", s.jobs.time);
  if (s.jobs.gpus_per_job > 0) add("--gpus-per-job", std::to_string(s.jobs.gpus_per_job));
  if (s.jobs.max_parallel > 0) add("--max-parallel", std::to_string(s.jobs.max_parallel));
  if (s.jobs.cpus_per_task > 0) add("--cpus-per-task", std::to_string(s.jobs.cpus_per_task));
  if (s.jobs.ranks_per_job > 1) add("--ranks-per-job", std::to_string(s.jobs.ranks_per_job));
  if (s.jobs.nodes_per_job > 0) add("--nodes-per-job", std::to_string(s.jobs.nodes_per_job));
  for (const auto& extra : s.jobs.extra_args) add("--sbatch-arg", extra);
  add("--retries", std::to_string(s.retries));
  add("--snapshot-every", std::to_string(s.snapshot_every));
  add("--publish-every", std::to_string(s.publish_every));
  return words;
}

// The coordinator job's own resources: one CPU, the partition and extra arguments of the trials.
sweeps::SlurmOptions coordinator_options(const SlurmSubmitSettings& s) {
  sweeps::SlurmOptions o;
  o.partition = s.jobs.partition;
  o.time = s.coordinator_time;
  o.cpus_per_task = 1;
  o.extra_args = s.jobs.extra_args;
  return o;
}

std::string coordinator_script(const SweepContext& ctx, const std::string& spec_path,
                               const SlurmSubmitSettings& settings) {
  std::string s = "#!/bin/bash\n";
  s += fmt::format("#SBATCH --job-name={}\n", coordinator_job_name(ctx.spec.name));
  s += fmt::format("#SBATCH --output={}\n",
                   (fs::absolute(ctx.layout.slurm_dir()) / "coordinator-%j.out").string());
  for (const auto& option : sweeps::sbatch_options(coordinator_options(settings))) {
    s += fmt::format("#SBATCH {}\n", option.argument);
  }
  // Preempted, it is requeued and resumes from the published database; SIGTERM ahead of the kill
  // lets it publish one last snapshot.
  s += "#SBATCH --requeue\n#SBATCH --signal=B:TERM@60\n";
  s += fmt::format(
      "# Written by `batchlab sweep submit --slurm` for study {}: the study's coordinator, which\n"
      "# submits every trial as a Slurm job of its own and publishes the study database to\n# {}\n",
      ctx.spec.name, fs::absolute(ctx.spec.results).string());
  std::string words =
      fmt::format("exec {} sweep slurm-coordinator {}", sweeps::shell_quote(self_executable()),
                  sweeps::shell_quote(fs::absolute(spec_path).string()));
  for (const auto& w : coordinator_words(settings)) words += " " + sweeps::shell_quote(w);
  return s + words + "\n";
}

std::string node_local_dir(const std::string& what) {
  for (const char* name : {"SLURM_TMPDIR", "TMPDIR"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return fmt::format("{}/batchlab-{}-{}", v, what, ::getpid());
  }
  return fmt::format("/tmp/batchlab-{}-{}", what, ::getpid());
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

}  // namespace

const std::vector<OptionSpec>& slurm_submit_options() {
  static const std::vector<OptionSpec> options = {{"slurm", false, false},
                                                  {"partition", true, false},
                                                  {"time", true, false},
                                                  {"gpus-per-job", true, false},
                                                  {"max-parallel", true, false},
                                                  {"cpus-per-task", true, false},
                                                  {"sbatch-arg", true, true},
                                                  {"dry-run", false, false},
                                                  {"coordinator-time", true, false},
                                                  {"retries", true, false},
                                                  {"snapshot-every", true, false},
                                                  {"publish-every", true, false},
                                                  {"ranks-per-job", true, false},
                                                  {"nodes-per-job", true, false}};
  return options;
}

SlurmSubmitSettings slurm_submit_settings(const Args& args, std::vector<std::string>* study_flags) {
  SlurmSubmitSettings s;
  s.jobs.partition = args.value("partition").value_or("");
  s.jobs.time = args.value("time").value_or("");
  s.jobs.extra_args = args.values("sbatch-arg");
  s.coordinator_time = args.value("coordinator-time").value_or("");
  auto bounded = [&](const char* flag, long long low, long long high, long long fallback) {
    const long long v = args.integer(flag).value_or(fallback);
    if (v < low || v > high) {
      throw UsageError(fmt::format("--{} {}: must be between {} and {}\nusage: {}", flag, v, low,
                                   high, args.usage()));
    }
    return static_cast<int>(v);
  };
  s.jobs.gpus_per_job = bounded("gpus-per-job", 0, 1024, 0);
  s.jobs.max_parallel = bounded("max-parallel", 0, 100000, 0);
  s.jobs.cpus_per_task = bounded("cpus-per-task", 0, 1024, 0);
  s.jobs.ranks_per_job = bounded("ranks-per-job", 1, 4096, 1);
  s.jobs.nodes_per_job = bounded("nodes-per-job", 0, 1024, 0);
  if (s.jobs.nodes_per_job > s.jobs.ranks_per_job) {
    throw UsageError(
        fmt::format("--nodes-per-job {} is more than --ranks-per-job {}: every node "
                    "runs at least one rank\nusage: {}",
                    s.jobs.nodes_per_job, s.jobs.ranks_per_job, args.usage()));
  }
  s.retries = bounded("retries", 0, 100, 0);
  s.snapshot_every = bounded("snapshot-every", 1, kMaxSeconds, 10);
  s.publish_every = bounded("publish-every", 1, kMaxSeconds, 30);
  if (study_flags != nullptr) {
    for (const char* flag : {"coordinator-time", "retries", "snapshot-every", "publish-every"}) {
      if (args.value(flag)) study_flags->push_back(std::string("--") + flag);
    }
  }
  return s;
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
  if (!dry_run) {
    sweeps::check_slurm_resources(settings.jobs, "the study's trial jobs");
    sweeps::check_slurm_resources(coordinator_options(settings), "the study's coordinator job");
    if (const auto live = live_study_coordinator(ctx); !live.empty()) {
      fmt::print(
          "study {}: its coordinator is queued or running as Slurm job {}; nothing to "
          "submit (`batchlab sweep status {}` shows its progress)\n",
          ctx.spec.name, live, spec_path);
      return kExitOk;
    }
  }
  fs::create_directories(ctx.layout.slurm_dir());
  const std::string script = (fs::path(ctx.layout.slurm_dir()) / "coordinator.sbatch").string();
  {
    std::ofstream out(script);
    out << coordinator_script(ctx, spec_path, settings);
    if (!out) throw Error(fmt::format("cannot write {}", script));
  }
  if (dry_run) {
    fmt::print("study {}: wrote {} ({} cells); not submitted (--dry-run)\n", ctx.spec.name, script,
               plan.cells.size());
    return kExitOk;
  }
  const auto [code, output] =
      sweeps::capture_command("sbatch --parsable " + sweeps::shell_quote(script));
  if (code != 0)
    throw Error(fmt::format("sbatch {} failed (exit code {}): {}", script, code, output));
  const std::string id = output.substr(0, output.find_first_of(";\n"));
  std::ofstream(coordinator_record(ctx), std::ios::app) << id << "\n";
  fmt::print(
      "study {}: submitted its coordinator as Slurm job {} ({} cells; every trial is a Slurm job "
      "of its own)\n  script {}\n  output {}/coordinator-{}.out\n  `batchlab sweep status {}` "
      "shows the cells, trials and Slurm jobs; the database is published to {}\n",
      ctx.spec.name, id, plan.cells.size(), script, ctx.layout.slurm_dir(), id, spec_path,
      ctx.spec.results);
  return kExitOk;
}

int cmd_sweep_slurm_coordinator(const std::vector<std::string>& argv) {
  Args args(argv, slurm_submit_options(), kCoordinatorUsage);
  const std::string spec_path = args.positional("STUDY.toml");
  auto settings = slurm_submit_settings(args, nullptr);
  auto ctx = load_sweep(spec_path, /*keep_config_toml=*/true);
  if (!ctx.spec.study) throw UsageError(fmt::format("{}: not a study ([study])", spec_path));
  const auto plan = checked_study_plan(ctx);
  const auto lock = coordinator_lock(ctx, "slurm-coordinator");
  // The database is worked on node-locally and published (the header says why).
  const std::string shared = ctx.spec.results;
  const std::string local_dir = node_local_dir("coordinator");
  fs::create_directories(local_dir);
  const std::string local = (fs::path(local_dir) / fs::path(shared).filename()).string();
  std::error_code ec;
  // A consistent copy, whatever journal the file was left in (a local `sweep run` leaves WAL).
  if (fs::exists(shared, ec)) results::snapshot_database(shared, local);
  fs::create_directories(fs::absolute(shared).parent_path(), ec);
  ctx.spec.results = local;
  sweeps::SweepRecords records(ctx.spec, ctx.layout);
  records.register_plan(ctx.spec, sweeps::Plan{});
  const auto publish = [&] { results::snapshot_database(local, shared); };
  publish();
  const char* job = std::getenv("SLURM_JOB_ID");
  fmt::print("study {}: coordinator (Slurm job {}) on {} cells, database {} published to {}\n",
             ctx.spec.name, job != nullptr ? job : "?", plan.cells.size(), local, shared);
  std::fflush(stdout);

  study::SlurmSourceOptions options;
  options.slurm = settings.jobs;
  options.slurm.batchlab = self_executable();
  options.slurm.snapshot_every = settings.snapshot_every;
  options.max_jobs = settings.jobs.max_parallel > 0 ? settings.jobs.max_parallel : 16;
  options.slurm.max_parallel = 0;  // one job per trial: the source limits how many are queued
  options.retries = settings.retries;
  options.stop_requests = &study_stop_requests();
  options.publish_interval = std::chrono::seconds(settings.publish_every);
  options.publish = publish;
  StudyPrinter printer(plan, /*in_slurm=*/true);
  study::SlurmTrialSource source(records, ctx.layout, ctx.spec.name, options, printer);
  int code = kExitFailed;
  try {
    code = run_study_engine(ctx, plan, records, source, printer);
  } catch (...) {
    publish();
    throw;
  }
  publish();
  fs::remove_all(local_dir, ec);
  return code;
}

std::set<std::string> study_trials_in_slurm(const SweepContext& ctx) {
  auto active = sweeps::slurm_active_runs(ctx.layout, ctx.spec.name);
  return active ? *active : sweeps::slurm_submitted_runs(ctx.layout);
}

void print_study_slurm_jobs(const SweepContext& ctx) {
  const auto coordinators = coordinator_jobs(ctx);
  const auto submitted = sweeps::slurm_submissions(ctx.layout);
  if (coordinators.empty() && submitted.empty()) return;
  const auto queue =
      sweeps::slurm_queue({coordinator_job_name(ctx.spec.name), "batchlab-" + ctx.spec.name});
  if (!queue) {
    fmt::print("  slurm: squeue did not answer; last coordinator job {}\n",
               coordinators.empty() ? "-" : coordinators.back());
    return;
  }
  std::string coordinator = "none queued or running";
  std::vector<std::string> trials;
  for (const auto& e : *queue) {
    if (e.name == coordinator_job_name(ctx.spec.name)) {
      coordinator = fmt::format("job {} {}", e.job_id, e.state);
      continue;
    }
    auto it = submitted.find(e.job_id);
    const std::string run =
        it != submitted.end() && e.task && *e.task < it->second.size() ? it->second[*e.task] : "?";
    trials.push_back(fmt::format("    {:<10} {:<10} {}", e.job_id, e.state, run));
  }
  fmt::print("  slurm: coordinator {} (submitted {} times); trial jobs queued or running: {}\n",
             coordinator, coordinators.size(), trials.size());
  for (const auto& line : trials) fmt::print("{}\n", line);
}

}  // namespace batchlab::cli
