#include "experiments/tasks/weights_export.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "core/errors.h"
#include "experiments/tasks/task_factory.h"
#include "models/pytorch_names.h"
#include "models/state_dict.h"

namespace batchlab::experiments {
namespace {

namespace fs = std::filesystem;

const char* kCheckpointsHint =
    "checkpoints are kept when train.checkpoint_every or train.checkpoint_minutes is set (a "
    "finished run then keeps its final weights)";

std::optional<int64_t> parse_step(const std::string& which) {
  if (which.empty() || !std::all_of(which.begin(), which.end(), ::isdigit)) return std::nullopt;
  return std::stoll(which);
}

std::string choose_best(const train::CheckpointStore& store, const config::ExperimentConfig& config,
                        const std::string& run_id) {
  if (config.data.val_size <= 0) {
    throw InputError(fmt::format(
        "--checkpoint best: run {} has no validation split (data.val_size = 0), and the best "
        "weights are chosen on validation metrics only; export final or a step, or train with "
        "data.val_size > 0",
        run_id));
  }
  std::error_code ec;
  if (!fs::exists(store.best_path(), ec)) {
    throw InputError(fmt::format(
        "--checkpoint best: {} does not exist: run {} kept no best weights ({}; best.pt is "
        "written at each evaluation that improves the validation metric); export final or a step",
        store.best_path(), run_id, kCheckpointsHint));
  }
  return store.best_path();
}

}  // namespace

std::string choose_checkpoint(const std::string& dir, const std::string& which,
                              const config::ExperimentConfig& config, const std::string& run_id) {
  const train::CheckpointStore store(dir);
  if (which == "best") return choose_best(store, config, run_id);
  const auto step = parse_step(which);
  if (which != "final" && !step) {
    throw InputError(fmt::format(
        "--checkpoint {}: expected final, best or a step number (e.g. --checkpoint 1200)", which));
  }
  const std::vector<std::string> files = store.list();
  if (files.empty()) {
    throw InputError(
        fmt::format("run {} has no checkpoint in {}; {}", run_id, dir, kCheckpointsHint));
  }
  if (!step) return files.front();  // newest first
  std::vector<int64_t> kept;
  for (const auto& file : files) {
    if (train::CheckpointStore::step_of(file) == *step) return file;
    kept.push_back(train::CheckpointStore::step_of(file));
  }
  std::reverse(kept.begin(), kept.end());
  throw InputError(fmt::format(
      "--checkpoint {}: run {} has no checkpoint of step {} in {}; kept: steps {} (the two newest "
      "checkpoints are kept){}",
      which, run_id, *step, dir, fmt::join(kept, ", "),
      fs::exists(store.best_path()) ? ", and best.pt (--checkpoint best)" : ""));
}

ExportedWeights export_weights(const config::ExperimentConfig& config, const std::string& run_id,
                               const std::string& checkpoint_file) {
  config::ModelConfig model = config.model;
  model.init_from.clear();  // the weights come from the checkpoint
  const auto task = make_task(model, config.data, config.batch.bn_group, torch::kCPU);
  ExportedWeights exported;
  exported.step = train::load_model_weights(checkpoint_file, run_id, task->model());
  const models::StateDict entries = models::to_pytorch_state_dict(model.arch, task->model());
  exported.bytes = models::state_dict_bytes(entries);
  exported.tensors = static_cast<int64_t>(entries.size());
  exported.names = models::pytorch_naming(model.arch);
  exported.module = models::pytorch_module(model.arch, entries);
  if (exported.names == "huggingface" && model.norm_first) {
    // The names match Hugging Face's, the computation does not: promise no more than the names.
    exported.module.describe +=
        "; but model.norm_first = true (pre-LN blocks): Hugging Face's BERT is post-LN, so a "
        "module of its classes loads these weights and computes something else";
    exported.module.promised = false;
  }
  if (fs::path(checkpoint_file).filename() == "best.pt") {
    exported.best =
        train::CheckpointStore(fs::path(checkpoint_file).parent_path().string()).read_best(run_id);
  }
  return exported;
}

}  // namespace batchlab::experiments
