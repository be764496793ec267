// `batchlab train CONFIG.toml [--set k=v]... [--db PATH] [--run-id ID]`: one job.
//
// Order matters for "bad input writes nothing": the configuration is parsed and validated, the data
// loaded, the batch geometry and optimizer groups built, and only then is the database opened.
#include <fmt/format.h>
#include <torch/torch.h>

#include <atomic>
#include <csignal>
#include <filesystem>

#include "cli/app.h"
#include "cli/args.h"
#include "cli/runtime_info.h"
#include "cli/sqlite_reporter.h"
#include "cli/test_hooks.h"
#include "core/config/loader.h"
#include "core/train/console_reporter.h"
#include "core/train/trainer.h"
#include "experiments/tasks/task_factory.h"
#include "models/registry.h"

namespace batchlab::cli {

namespace {

std::atomic<bool> g_stop_requested{false};

// SIGTERM/SIGUSR1/SIGUSR2 (cluster preemption) and the first Ctrl-C end the run at the next step
// boundary as `preempted`; a second Ctrl-C kills the process.
extern "C" void on_stop_signal(int sig) {
  g_stop_requested.store(true);
  if (sig == SIGINT) std::signal(SIGINT, SIG_DFL);
}

void install_stop_handlers() {
  for (int sig : {SIGINT, SIGTERM, SIGUSR1, SIGUSR2}) std::signal(sig, on_stop_signal);
}

config::LoadOptions load_options(std::vector<std::string> overrides) {
  config::LoadOptions opts;
  opts.overrides = std::move(overrides);
  for (const auto& m : models::list_models()) opts.model_archs.push_back(m.name);
  opts.datasets = experiments::dataset_names();
  return opts;
}

}  // namespace

int cmd_train(const std::vector<std::string>& argv) {
  Args args(argv,
            {{"set", true, true}, {"db", true, false}, {"run-id", true, false},
             {"checkpoint-dir", true, false}},
            "batchlab train CONFIG.toml [--set key=value]... [--db PATH] [--run-id ID] "
            "[--checkpoint-dir DIR]");
  const std::string config_path = args.positional("CONFIG.toml");
  const auto cfg = config::load_experiment_file(config_path, load_options(args.values("set")));
  const std::string run_id = config::run_id(cfg);
  if (auto given = args.value("run-id"); given && *given != run_id) {
    throw UsageError(fmt::format(
        "--run-id {} does not match the configuration: {} with these --set overrides has run id {}",
        *given, config_path, run_id));
  }
  const std::string db_path = args.value("db").value_or("results/batchlab.db");

  const int64_t threads = configure_threads(cfg.train.threads);
  fmt::print("batchlab {} | run {} | {} -> {} | LibTorch {} | {} threads\n", batchlab_version(),
             run_id, config_path, db_path, torch_version(), threads);
  std::fflush(stdout);

  torch::manual_seed(static_cast<uint64_t>(cfg.train.seed));
  auto task = experiments::make_task(cfg.model, cfg.data, cfg.batch, cfg.train);

  train::TrainerOptions options;
  options.batch = cfg.batch;
  options.optim = cfg.optim;
  options.schedule = cfg.schedule;
  options.train = cfg.train;
  options.data_seed = cfg.data.seed;
  options.eval_train_samples = cfg.data.eval_train_samples;
  options.threads = threads;
  options.stop_requested = &g_stop_requested;
  options.run_id = run_id;
  options.checkpoint_every_s = cfg.train.checkpoint_minutes * 60.0;
  // Checkpoints live beside the database unless told otherwise: <db dir>/checkpoints/<run id>/.
  // A run whose directory holds a checkpoint of this configuration resumes from it.
  const std::string checkpoint_dir = args.value("checkpoint-dir").value_or(
      (std::filesystem::path(db_path).parent_path() / "checkpoints" / run_id).string());
  options.checkpoints = std::make_shared<train::CheckpointStore>(checkpoint_dir);

  train::FanoutReporter reporter;
  reporter.add(std::make_shared<train::ConsoleReporter>(stdout));
  train::Trainer trainer(options, *task, reporter);
  // A checkpoint of another configuration is bad input, refused before anything is recorded.
  const int64_t resume_step = trainer.resume();

  // Everything that can reject the input has run; from here on the run is recorded.
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
  auto sqlite =
      std::make_shared<SqliteReporter>(db_path, identity, resume_step > 0 ? resume_step : -1);
  reporter.add(sqlite);
  // Last, so the rows of the faulting step are already queued when the fault strikes.
  if (auto fault = make_fault_injector(run_id)) reporter.add(fault);

  install_stop_handlers();
  train::RunOutcome outcome;
  try {
    outcome = trainer.run();
  } catch (const std::exception& e) {
    sqlite->record_failure(e.what());
    throw;
  }
  return outcome.status == train::RunStatus::done || outcome.status == train::RunStatus::diverged
             ? kExitOk
             : kExitFailed;
}

}  // namespace batchlab::cli
