// `batchlab train CONFIG.toml [--set k=v]... [--db PATH] [--run-id ID] [--nproc N]`: one job.
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
#include "core/train/trainer.h"
#include "experiments/tasks/task_factory.h"
#include "models/registry.h"

namespace batchlab::cli {

namespace {

std::atomic<bool> g_stop_requested{false};

// Ranks connect after loading their data, which can take a while and differently long per rank:
// the rendezvous waits at least this long for all of them, whatever train.dist_timeout says.
constexpr std::chrono::milliseconds kRendezvousAllowance = std::chrono::minutes(2);

// SIGTERM/SIGUSR1/SIGUSR2 (cluster preemption) and the first Ctrl-C end the run at the next step
// boundary as `preempted`; a second Ctrl-C kills the process.
extern "C" void on_stop_signal(int sig) {
  g_stop_requested.store(true);
  if (sig == SIGINT) std::signal(SIGINT, SIG_DFL);
}

void install_stop_handlers() {
  for (int sig : {SIGINT, SIGTERM, SIGUSR1, SIGUSR2}) std::signal(sig, on_stop_signal);
}

config::LoadOptions load_options(std::vector<std::string> overrides, int64_t world_size) {
  config::LoadOptions opts;
  opts.overrides = std::move(overrides);
  opts.world_size = world_size;
  for (const auto& m : models::list_models()) opts.model_archs.push_back(m.name);
  opts.datasets = experiments::dataset_names();
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

}  // namespace

int cmd_train(const std::vector<std::string>& argv) {
  Args args(argv,
            {{"set", true, true},
             {"db", true, false},
             {"run-id", true, false},
             {"checkpoint-dir", true, false},
             {"nproc", true, false}},
            "batchlab train CONFIG.toml [--set key=value]... [--db PATH] [--run-id ID] "
            "[--checkpoint-dir DIR] [--nproc N]");
  if (auto nproc = args.integer("nproc")) return launch(args, argv, *nproc);

  const auto rv = dist::rendezvous_from_process_env();
  const std::string config_path = args.positional("CONFIG.toml");
  const auto cfg =
      config::load_experiment_file(config_path, load_options(args.values("set"), rv.world_size));
  const std::string run_id = config::run_id(cfg);
  if (auto given = args.value("run-id"); given && *given != run_id) {
    throw UsageError(fmt::format(
        "--run-id {} does not match the configuration: {} with these --set overrides has run id {}",
        *given, config_path, run_id));
  }
  const std::string db_path = args.value("db").value_or("results/batchlab.db");
  const bool is_root = rv.rank == 0;
  // A rank's output goes through a pipe (launcher, srun): line-buffer it so lines arrive whole.
  if (rv.distributed()) std::setvbuf(stdout, nullptr, _IOLBF, 0);

  // Ranks sharing a host share its cores: train.threads = 0 gives each its share.
  const int64_t hw = std::max<int64_t>(1, std::thread::hardware_concurrency());
  const int64_t threads = configure_threads(
      cfg.train.threads > 0 ? cfg.train.threads : std::max<int64_t>(1, hw / rv.local_world_size));
  const auto device = train::resolve_device(cfg.train.device, rv.local_rank);
  train::use_device(device);
  fmt::print(
      "batchlab {} | run {} | {} -> {} | LibTorch {} | {} threads | {}{}\n", batchlab_version(),
      run_id, config_path, db_path, torch_version(), threads, device.str(),
      rv.distributed() ? fmt::format(" | rank {} of {} ({})", rv.rank, rv.world_size, rv.source)
                       : "");
  std::fflush(stdout);

  config::TrainConfig train_cfg = cfg.train;
  train_cfg.device = device.str();  // "cuda" resolved to this rank's GPU
  torch::manual_seed(static_cast<uint64_t>(cfg.train.seed));
  auto task = experiments::make_task(cfg.model, cfg.data, cfg.batch, train_cfg);

  train::TrainerOptions options;
  options.batch = cfg.batch;
  options.optim = cfg.optim;
  options.schedule = cfg.schedule;
  options.train = train_cfg;
  options.data_seed = cfg.data.seed;
  options.eval_train_samples = cfg.data.eval_train_samples;
  options.threads = threads;
  options.stop_requested = &g_stop_requested;
  options.run_id = run_id;
  options.checkpoint_every_s = cfg.train.checkpoint_minutes * 60.0;
  if (rv.distributed()) {
    dist::GroupOptions group;
    group.backend = dist::choose_backend(cfg.train.dist_backend, device);
    group.device = device;
    group.timeout = std::chrono::milliseconds(std::llround(cfg.train.dist_timeout_s * 1000.0));
    group.rendezvous_timeout =
        std::max<std::chrono::milliseconds>(group.timeout, kRendezvousAllowance);
    options.data_parallel =
        std::make_shared<dist::ProcessGroupDataParallel>(dist::connect(rv, group));
    // The model was initialized from train.seed on every rank (and rank 0's copy is broadcast);
    // from here on each rank draws its own random numbers (dropout).
    if (!is_root) {
      torch::manual_seed(
          train::mix_seed(static_cast<uint64_t>(cfg.train.seed), static_cast<uint64_t>(rv.rank)));
    }
  }
  // Checkpoints live beside the database unless told otherwise: <db dir>/checkpoints/<run id>/.
  // A run whose directory holds a checkpoint of this configuration resumes from it.
  const std::string checkpoint_dir =
      args.value("checkpoint-dir")
          .value_or(
              (std::filesystem::path(db_path).parent_path() / "checkpoints" / run_id).string());
  options.checkpoints = std::make_shared<train::CheckpointStore>(checkpoint_dir);

  train::FanoutReporter reporter;
  if (is_root) {
    reporter.add(std::make_shared<train::ConsoleReporter>(stdout));
  } else {
    reporter.add(std::make_shared<RankNotes>(rv.rank));
  }
  train::Trainer trainer(options, *task, reporter);
  // A checkpoint of another configuration is bad input, refused before anything is recorded.
  const int64_t resume_step = trainer.resume();

  // Everything that can reject the input has run; from here on the run is recorded (by rank 0).
  std::shared_ptr<SqliteReporter> sqlite;
  if (is_root) {
    if (auto parent = std::filesystem::path(db_path).parent_path(); !parent.empty()) {
      std::filesystem::create_directories(parent);
    }
    RunIdentity identity;
    identity.run_id = run_id;
    identity.config_toml = config::to_canonical_toml(cfg);
    identity.model = cfg.model.arch;
    identity.dataset = cfg.data.dataset;
    identity.optimizer = cfg.optim.name;
    identity.scaling = cfg.optim.scaling;
    identity.base_lr = cfg.optim.base_lr;
    identity.seed = cfg.train.seed;
    identity.host = host_name();
    identity.git_sha = git_sha();
    identity.torch_version = torch_version();
    sqlite =
        std::make_shared<SqliteReporter>(db_path, identity, resume_step > 0 ? resume_step : -1);
    reporter.add(sqlite);
  }
  // Last, so the rows of the faulting step are already queued when the fault strikes.
  if (auto fault = make_fault_injector(run_id, rv.rank)) reporter.add(fault);

  install_stop_handlers();
  train::RunOutcome outcome;
  try {
    outcome = trainer.run();
  } catch (const std::exception& e) {
    if (sqlite) sqlite->record_failure(e.what());
    throw;
  }
  return outcome.status == train::RunStatus::done || outcome.status == train::RunStatus::diverged
             ? kExitOk
             : kExitFailed;
}

}  // namespace batchlab::cli
