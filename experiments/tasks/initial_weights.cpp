#include "experiments/tasks/initial_weights.h"

#include <fmt/format.h>

#include "core/errors.h"
#include "models/pytorch_names.h"
#include "models/state_dict.h"

namespace batchlab::experiments {
namespace {

std::vector<std::string> merged(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The non-strict load's report: one line for what came from the file, one per kind of leftover.
std::vector<std::string> describe_partial_load(const config::ModelConfig& config, size_t targets,
                                               const models::StateDictFit& fit) {
  const std::vector<std::string> kept = merged(fit.missing, fit.mismatched);
  std::vector<std::string> notes;
  notes.push_back(fmt::format(
      "model.init_from = {}: {} of {} parameters and buffers loaded (model.init_strict = false)",
      config.init_from, targets - kept.size(), targets));
  if (!kept.empty()) {
    notes.push_back(fmt::format("model.init_from: left at their initialization ({}): {}",
                                kept.size(), models::format_name_list(kept)));
  }
  if (!fit.unexpected.empty()) {
    notes.push_back(fmt::format("model.init_from: file entries ignored, not in the model ({}): {}",
                                fit.unexpected.size(), models::format_name_list(fit.unexpected)));
  }
  return notes;
}

}  // namespace

std::vector<std::string> load_initial_weights(torch::nn::Module& model,
                                              const config::ModelConfig& config) {
  if (config.init_from.empty()) return {};
  const std::string& path = config.init_from;
  const models::StateDict entries =
      models::from_pytorch_state_dict(config.arch, models::read_state_dict(path), path);
  const size_t targets = models::state_dict(model).size();
  if (!config.init_strict) {
    return describe_partial_load(config, targets, models::load_matching_state_dict(model, entries));
  }
  try {
    models::load_state_dict(model, entries, path);
  } catch (const InputError& e) {
    throw InputError(fmt::format(
        "model.init_from = {} To keep what does not fit at its initialization (a new head, "
        "another number of classes or input channels), set model.init_strict = false",
        e.what()));
  }
  return {fmt::format("model.init_from = {}: all {} parameters and buffers loaded (SHA-256 {})",
                      path, targets, config.init_sha256.substr(0, 16))};
}

}  // namespace batchlab::experiments
