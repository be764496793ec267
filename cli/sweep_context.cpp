#include "cli/sweep_context.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "core/errors.h"
#include "experiments/data/fashion_mnist.h"
#include "experiments/data/image_dataset.h"
#include "experiments/tasks/task_factory.h"

namespace batchlab::cli {

namespace {

namespace fs = std::filesystem;

// The training split of a dataset whose size lives in its files (Fashion-MNIST's label header,
// CIFAR-10's file sizes), read once per folder: a sweep of 100,000 jobs shares one or two.
std::optional<int64_t> cached_split_size(const config::DataConfig& data) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, std::string>, std::optional<int64_t>> known;
  std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_pair(data.dataset, data.path);
  auto it = known.find(key);
  if (it == known.end()) it = known.emplace(key, data::image_split_size(data)).first;
  return it->second;
}

// What `sweep plan` knows of a job's training examples: the count the trainer will use
// (data::training_examples_of_split: data.train_size of the split less data.val_size), or a
// problem with the key to fix; unknown (no samples, no error) where only loading can tell.
sweeps::TrainSize plan_train_size(const config::DataConfig& data) {
  sweeps::TrainSize size;
  const bool files = data.dataset == "fashion_mnist" || data.dataset == "cifar10";
  if (!files && data.dataset != "synthetic") return size;
  const auto split = files ? cached_split_size(data) : data::image_split_size(data);
  if (!split) {
    // CIFAR-10 has no package to install: a plan made before the files are there stays unknown
    // and the run says what is missing.
    if (data.dataset == "fashion_mnist") {
      size.error_key = "data.path";
      size.error = fmt::format(
          "Fashion-MNIST files not found in {} (install dataset-fashion-mnist: "
          "scripts/setup.sh, or set data.path)",
          data.path.empty() ? data::kFashionMnistDefaultDir : data.path);
    }
    return size;
  }
  size.samples = data::training_examples_of_split(*split, data);
  if (size.samples) return size;
  const int64_t kept = data.train_size > 0 ? data.train_size : *split;
  if (data.train_size > *split) {
    size.error_key = "data.train_size";
    size.error = fmt::format("larger than the {} training examples of {}", *split, data.dataset);
  } else if (data.val_size >= kept) {
    size.error_key = "data.val_size";
    size.error = fmt::format(
        "must be below the {} training examples it is held out of, leaving some to train on", kept);
  }
  return size;
}

}  // namespace

sweeps::PlanOptions cli_plan_options() {
  sweeps::PlanOptions options;
  experiments::add_registry_names(options.load);
  options.train_size = plan_train_size;
  return options;
}

SweepContext load_sweep(const std::string& spec_path, bool keep_config_toml) {
  SweepContext ctx;
  ctx.spec = sweeps::load_sweep_spec(spec_path);
  auto options = cli_plan_options();
  // A study builds its trials from its cells' configs.
  options.keep_config_toml =
      keep_config_toml || ctx.spec.study.has_value() || ctx.spec.search.has_value();
  ctx.plan = sweeps::expand(ctx.spec, options);
  ctx.layout = sweeps::RunLayout(ctx.spec.runs_dir);
  return ctx;
}

std::optional<sweeps::FileLock> try_coordinator_lock(const sweeps::RunLayout& layout,
                                                     const std::string& what) {
  // Removed when released: a sweep command leaves no lock file behind (nothing to clean up after a
  // command refused its input).
  auto lock = sweeps::FileLock::try_acquire(layout.coordinator_lock_path(),
                                            /*remove_on_release=*/true);
  if (lock) lock->describe(fmt::format("pid {}: batchlab sweep {}\n", ::getpid(), what));
  return lock;
}

sweeps::FileLock coordinator_lock(const SweepContext& ctx, const std::string& what) {
  auto lock = try_coordinator_lock(ctx.layout, what);
  // `sweep status` holds the lock only while it folds records (a second or two): wait for it
  // rather than refuse a run or submit that happened to start at the same moment.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  auto held_by_status = [&] {
    // Empty: its holder has just taken it and not yet said who it is.
    const std::string holder = sweeps::lock_description(ctx.layout.coordinator_lock_path());
    return holder.empty() || holder.find("sweep status") != std::string::npos;
  };
  while (!lock && std::chrono::steady_clock::now() < deadline && held_by_status()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    lock = try_coordinator_lock(ctx.layout, what);
  }
  if (!lock) {
    throw Error(fmt::format("sweep {} is already being run or checked: {} ({})", ctx.spec.name,
                            ctx.layout.coordinator_lock_path(),
                            sweeps::lock_description(ctx.layout.coordinator_lock_path())));
  }
  return std::move(*lock);
}

std::string self_executable() {
  std::error_code ec;
  const auto path = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("batchlab") : path.string();
}

std::string format_seconds(double seconds) {
  if (seconds < 60.0) return fmt::format("{:.1f}s", seconds);
  const int total = static_cast<int>(seconds + 0.5);
  if (total < 3600) return fmt::format("{}m{:02d}s", total / 60, total % 60);
  return fmt::format("{}h{:02d}m", total / 3600, (total % 3600) / 60);
}

}  // namespace batchlab::cli
