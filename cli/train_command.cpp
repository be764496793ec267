// `batchlab train CONFIG.toml [--set k=v]... [--db PATH] [--run-id ID] [--nproc N]`: one job.
// cmd_train reads as its steps: load and check the job, set up the process (threads, device), build
// the task and the trainer, resume, open the records, run.
//
// Order matters for "bad input writes nothing": the configuration is parsed and validated, the data
// loaded, the batch geometry and optimizer groups built, and only then is the database opened.
//
// Data parallel: with --nproc N this process only launches N ranks (cli/local_launcher.h). A rank
// (RANK/WORLD_SIZE or SLURM_PROCID/SLURM_NTASKS in the environment, core/dist/rendezvous.h) joins
// the process group after its data is loaded; rank 0 records the run and writes the checkpoints,
// the other ranks record nothing.
#include <fmt/format.h>
#include <torch/torch.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <thread>

#include "cli/app.h"
#include "cli/args.h"
#include "cli/local_launcher.h"
#include "cli/runtime_info.h"
#include "cli/sqlite_reporter.h"
#include "cli/test_hooks.h"
#include "core/config/loader.h"
#include "core/dist/data_parallel.h"
#include "core/dist/rendezvous.h"
#include "core/train/console_reporter.h"
#include "core/train/device.h"
#include "core/train/device_selection.h"
#include "core/train/trainer.h"
#include "experiments/tasks/task_factory.h"
#include "results/database_file.h"
#include "sweeps/run_layout.h"
#include "sweeps/run_row.h"

namespace batchlab::cli {

namespace {

std::atomic<bool> g_train_stop_requested{false};

// Ranks connect after loading their data, which can take a while and differently long per rank:
// the rendezvous waits at least this long for all of them, whatever train.dist_timeout says.
constexpr std::chrono::milliseconds kRendezvousAllowance = std::chrono::minutes(2);

// SIGTERM/SIGUSR1/SIGUSR2 (cluster preemption) and the first Ctrl-C end the run at the next step
// boundary as `preempted`; a second Ctrl-C kills the process.
extern "C" void on_stop_signal(int sig) {
  g_train_stop_requested.store(true);
  if (sig == SIGINT) std::signal(SIGINT, SIG_DFL);
}

void install_stop_handlers() {
  for (int sig : {SIGINT, SIGTERM, SIGUSR1, SIGUSR2}) std::signal(sig, on_stop_signal);
}

config::LoadOptions load_options(std::vector<std::string> overrides, int64_t world_size) {
  config::LoadOptions opts;
  opts.overrides = std::move(overrides);
  opts.world_size = world_size;
  experiments::add_registry_names(opts);
  experiments::add_data_sizes(opts);
  return opts;
}

// What ranks other than 0 print: their notes (a missing per-rank RNG file on resume, ...); their
// records are rank 0's to report.
class RankNotes : public train::Reporter {
 public:
  explicit RankNotes(int64_t rank) : rank_(rank) {}
  void note(const std::string& text) override {
    fmt::print(stderr, "rank {}: note: {}\n", rank_, text);
    std::fflush(stderr);
  }

 private:
  int64_t rank_;
};

// `--nproc N`: validate the configuration for world size N here (bad input exits 2 before any
// rank starts), then run the ranks with the same arguments minus --nproc.
int launch(const Args& args, const std::vector<std::string>& argv, long long nproc) {
  if (nproc < 1 || nproc > 1024) {
    throw UsageError(fmt::format("--nproc {}: must be between 1 and 1024", nproc));
  }
  if (std::getenv("RANK") != nullptr || std::getenv("WORLD_SIZE") != nullptr) {
    throw UsageError(
        "--nproc cannot be used inside a launched rank (RANK/WORLD_SIZE are set); "
        "unset them or drop --nproc");
  }
  const auto cfg = config::load_experiment_file(args.positional("CONFIG.toml"),
                                                load_options(args.values("set"), nproc));
  LaunchOptions launch;
  launch.nproc = static_cast<int>(nproc);
  launch.rank_args.push_back("train");
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == "--nproc") {
      ++i;  // and its value
    } else if (argv[i].rfind("--nproc=", 0) != 0) {
      launch.rank_args.push_back(argv[i]);
    }
  }
  // Every collective of a rank ends within train.dist_timeout (the rendezvous within its
  // allowance): a rank still alive well after that is wedged outside batchlab's control.
  launch.kill_after_s = launch.grace_s +
                        std::max(cfg.train.dist_timeout_s,
                                 std::chrono::duration<double>(kRendezvousAllowance).count()) +
                        30.0;
  return launch_local_ranks(launch);
}

constexpr const char* kTrainUsage =
    "batchlab train CONFIG.toml [--set key=value]... [--db PATH] [--run-id ID] "
    "[--checkpoint-dir DIR] [--nproc N] [--stop-file PATH]\n"
    "\n"
    "Trains one job and records it in the database.\n"
    "  --set key=value       override a config key (repeatable)\n"
    "  --db PATH             database file (default results/batchlab.db)\n"
    "  --run-id ID           a check, not a name: the run id is the first 16 hex digits of the\n"
    "                        SHA-256 of the canonical config (after --set), so the same config\n"
    "                        always gets the same id; a different ID is refused. Leave it out, or\n"
    "                        pass the id `batchlab sweep plan` prints for the job\n"
    "  --checkpoint-dir DIR  checkpoints (default <db dir>/checkpoints/<run id>); a checkpoint of\n"
    "                        this config there is resumed from\n"
    "  --nproc N             data parallel over N local processes\n"
    "  --stop-file PATH      read after every evaluation: a line `REASON STEP` there (e.g.\n"
    "                        `pruned 120`) ends the run at its first evaluation at or past STEP,\n"
    "                        status stopped, exit 0 (studies use it; a malformed file is ignored)\n"
    "  --records-end STEP    the last step the run's records in --db hold (set by `sweep\n"
    "                        slurm-task`, whose records may lag its checkpoints): no checkpoint\n"
    "                        past it is resumed from, so that every step is recorded";

// The job as the command line and the config file give it.
struct Job {
  std::string config_path;
  config::ExperimentConfig cfg;
  std::string run_id;
  std::string db_path;
};

Job load_job(const Args& args, const dist::Rendezvous& rv) {
  Job job;
  job.config_path = args.positional("CONFIG.toml");
  auto options = load_options(args.values("set"), rv.world_size);
  // What the config asks of this machine (core/config/host_rules.h): said once per host, before
  // the banner, and never an error.
  std::vector<Diagnostic> warnings;
  options.host_cores = static_cast<int64_t>(std::thread::hardware_concurrency());
  options.host_processes = rv.local_world_size;
  if (rv.local_rank == 0) options.warnings = &warnings;
  job.cfg = config::load_experiment_file(job.config_path, options);
  for (const auto& w : warnings) fmt::print(stderr, "warning: {}\n", w.to_string());
  job.run_id = config::run_id(job.cfg);
  if (auto given = args.value("run-id"); given && *given != job.run_id) {
    throw UsageError(fmt::format(
        "--run-id {} does not match the configuration: {} with these --set overrides has run id "
        "{}. --run-id is a check, not a name: the run id is the SHA-256 of the canonical config, "
        "so the same config always gets the same id. Drop --run-id, or pass the id `batchlab "
        "sweep plan` prints for this job",
        *given, job.config_path, job.run_id));
  }
  job.db_path = args.value("db").value_or("results/batchlab.db");
  // A folder, a device or a file that is no batchlab database is refused now, before any data is
  // loaded or anything (checkpoints beside the database included) is created.
  results::check_database_path(job.db_path, results::DatabaseUse::kCreateOrOpen, "--db");
  return job;
}

// What this process (rank) runs on.
struct ProcessSetup {
  c10::Device device = c10::kCPU;
  int64_t threads = 1;
};

// Threads and device of this process (rank).
ProcessSetup set_up_process(const Job& job, const dist::Rendezvous& rv) {
  // A rank's output goes through a pipe (launcher, srun): line-buffer it so lines arrive whole.
  if (rv.distributed()) std::setvbuf(stdout, nullptr, _IOLBF, 0);
  // A peer that dies closes its sockets, and this rank's next write to one raises SIGPIPE, whose
  // default ends the process before it can say which collective failed or record the run as
  // failed (seen: the run left 'running'). Ignored, the write returns EPIPE and gloo throws.
  if (rv.distributed()) std::signal(SIGPIPE, SIG_IGN);
  // Ranks sharing a host share its cores: train.threads = 0 gives each its share.
  const int64_t hw = std::max<int64_t>(1, std::thread::hardware_concurrency());
  ProcessSetup setup;
  setup.threads =
      configure_threads(job.cfg.train.threads > 0 ? job.cfg.train.threads
                                                  : std::max<int64_t>(1, hw / rv.local_world_size));
  train::DeviceRequest request;
  request.spec = job.cfg.train.device;
  request.local_rank = rv.local_rank;
  request.local_world_size = rv.local_world_size;
  setup.device = train::resolve_device(request);
  train::use_device(setup.device);
  return setup;
}

// The run's banner, printed once the task is built: the data and the starting weights
// (model.init_from) are read by then, so input they refuse never follows a banner that reads as
// if the run had started.
void print_banner(const Job& job, const dist::Rendezvous& rv, const ProcessSetup& setup) {
  fmt::print(
      "batchlab {} | run {} | {} -> {} | LibTorch {} | {} threads | {}{}\n", batchlab_version(),
      job.run_id, job.config_path, job.db_path, torch_version(), setup.threads, setup.device.str(),
      rv.distributed() ? fmt::format(" | rank {} of {} ({})", rv.rank, rv.world_size, rv.source)
                       : "");
  std::fflush(stdout);
}

// Joins the process group (after the data is loaded); from then on each rank draws its own random
// numbers (dropout): the model was initialized from train.seed on every rank and rank 0's copy is
// broadcast.
std::shared_ptr<train::DataParallel> join_ranks(const Job& job, const dist::Rendezvous& rv,
                                                c10::Device device) {
  dist::GroupOptions group;
  group.backend = dist::choose_backend(job.cfg.train.dist_backend, device);
  group.device = device;
  group.timeout = std::chrono::milliseconds(std::llround(job.cfg.train.dist_timeout_s * 1000.0));
  group.rendezvous_timeout =
      std::max<std::chrono::milliseconds>(group.timeout, kRendezvousAllowance);
  auto pg = dist::connect(rv, group);
  // Every rank says where it listens: the first thing to read when ranks on different hosts
  // cannot reach each other.
  fmt::print("rank {} of {}: {}\n", rv.rank, rv.world_size, pg->transport());
  std::fflush(stdout);
  auto dp = std::make_shared<dist::ProcessGroupDataParallel>(std::move(pg));
  if (rv.rank != 0) {
    torch::manual_seed(
        train::mix_seed(static_cast<uint64_t>(job.cfg.train.seed), static_cast<uint64_t>(rv.rank)));
  }
  return dp;
}

train::TrainerOptions trainer_options(const Args& args, const Job& job, const dist::Rendezvous& rv,
                                      c10::Device device) {
  train::TrainerOptions options;
  options.device = device;
  options.stop_requested = &g_train_stop_requested;
  options.run_id = job.run_id;
  options.stop_file = args.value("stop-file").value_or("");
  if (auto end = args.integer("records-end")) {
    if (*end < 0) {
      throw UsageError(fmt::format("--records-end {}: must be a step, 0 or more\nusage: {}", *end,
                                   args.usage()));
    }
    options.records_end = *end;
  }
  if (rv.distributed()) options.data_parallel = join_ranks(job, rv, device);
  // Checkpoints live beside the database unless told otherwise: <db dir>/checkpoints/<run id>/.
  // A run whose directory holds a checkpoint of this configuration resumes from it.
  const std::string checkpoint_dir =
      args.value("checkpoint-dir")
          .value_or(sweeps::default_checkpoint_dir(job.db_path, job.run_id));
  options.checkpoints = std::make_shared<train::CheckpointStore>(checkpoint_dir);
  return options;
}

// The config recorded with the run (runs.config_toml): the job's, plus the hash of the tokenizer
// file it trains with (data.tokenizer_sha256), so that `export --format hf` can refuse a tokenizer
// replaced since. The run id stays the job's: it is worked out from the job's config alone, and
// a config without the key keeps the id it always had.
std::string recorded_config_toml(const config::ExperimentConfig& cfg, const train::Task& task) {
  config::ExperimentConfig recorded = cfg;
  if (const auto sha = task.tokenizer_sha256(); !sha.empty()) recorded.data.tokenizer_sha256 = sha;
  return config::to_canonical_toml(recorded);
}

// Rank 0 records the run from here on (everything that can reject the input has run).
// `started_over`: why this attempt starts from step 0 although the run had checkpoints.
std::shared_ptr<SqliteReporter> open_records(const Job& job, const train::Task& task,
                                             int64_t resume_step,
                                             const std::optional<std::string>& started_over) {
  const auto& cfg = job.cfg;
  if (auto parent = std::filesystem::path(job.db_path).parent_path(); !parent.empty()) {
    std::filesystem::create_directories(parent);
  }
  RunIdentity identity = sweeps::run_row_of(cfg);  // the same row `sweep plan` registers
  identity.config_toml = recorded_config_toml(cfg, task);
  identity.host = host_name();
  identity.git_sha = git_sha();
  identity.torch_version = torch_version();
  identity.started_over = started_over;
  return std::make_shared<SqliteReporter>(job.db_path, identity,
                                          resume_step > 0 ? resume_step : -1);
}

// A crash is recorded as `failed` before it propagates (to the exit code).
train::RunOutcome run_recorded(train::Trainer& trainer, SqliteReporter* records) {
  install_stop_handlers();
  try {
    return trainer.run();
  } catch (const std::exception& e) {
    if (records) records->record_failure(e.what());
    throw;
  }
}

// Diverged and stopped (like done) are results; a preempted run is to be resumed.
int exit_code(train::RunStatus status) {
  const bool result = status == train::RunStatus::done || status == train::RunStatus::diverged ||
                      status == train::RunStatus::stopped;
  return result ? kExitOk : kExitFailed;
}

}  // namespace

int cmd_train(const std::vector<std::string>& argv) {
  Args args(argv,
            {{"set", true, true},
             {"db", true, false},
             {"run-id", true, false},
             {"checkpoint-dir", true, false},
             {"nproc", true, false},
             {"stop-file", true, false},
             {"records-end", true, false}},
            kTrainUsage);
  if (auto nproc = args.integer("nproc")) return launch(args, argv, *nproc);

  const auto rv = dist::rendezvous_from_process_env();
  const Job job = load_job(args, rv);
  const ProcessSetup setup = set_up_process(job, rv);
  const c10::Device device = setup.device;
  torch::manual_seed(static_cast<uint64_t>(job.cfg.train.seed));
  std::vector<std::string> notes;  // what the starting weights (model.init_from) left to say
  auto task =
      experiments::make_task(job.cfg.model, job.cfg.data, job.cfg.batch.bn_group, device, &notes);
  print_banner(job, rv, setup);
  const auto options = trainer_options(args, job, rv, device);

  train::FanoutReporter reporter;
  if (rv.rank == 0) {
    reporter.add(std::make_shared<train::ConsoleReporter>(stdout));
    for (const auto& note : notes) reporter.note(note);
  } else {
    reporter.add(std::make_shared<RankNotes>(rv.rank));
  }
  train::Trainer trainer(job.cfg, options, *task, reporter);
  // A checkpoint of another configuration is bad input, refused before anything is recorded.
  const int64_t resume_step = trainer.resume();
  const auto records =
      rv.rank == 0 ? open_records(job, *task, resume_step, trainer.started_over()) : nullptr;
  if (records) reporter.add(records);
  // Last, so the rows of the faulting step are already queued when the fault strikes.
  if (auto fault = make_fault_injector(job.run_id, rv.rank)) reporter.add(fault);
  return exit_code(run_recorded(trainer, records.get()).status);
}

}  // namespace batchlab::cli
