#include "experiments/tasks/initial_weights.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>

#include "core/config/init_file.h"
#include "core/errors.h"
#include "models/bert.h"
#include "models/gpt2.h"
#include "models/hf_bert_config.h"
#include "models/hf_gpt2_config.h"
#include "models/pytorch_names.h"
#include "models/safetensors.h"
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

// config.json's differences from the network the experiment built (models/hf_bert_config.h,
// hf_gpt2_config.h); InputError for a network no Hugging Face folder describes.
std::vector<std::string> hf_folder_differences(const torch::nn::Module& model,
                                               const config::ModelConfig& config,
                                               const std::string& config_json) {
  if (const auto* bert = dynamic_cast<const models::BertForPretraining*>(&model)) {
    return models::hf_bert_config_differences(config_json, bert->config());
  }
  if (const auto* gpt2 = dynamic_cast<const models::Gpt2LMHeadModel*>(&model)) {
    return models::hf_gpt2_config_differences(config_json, gpt2->config());
  }
  throw InputError(fmt::format(
      "model.init_from = {}: a Hugging Face folder starts a BERT (model.arch = \"bert_*\") or a "
      "GPT-2 (model.arch = \"gpt2_*\"), not model.arch = \"{}\"; give a weights file (.pt or "
      ".safetensors) instead",
      config.init_from, config.arch));
}

// A save_pretrained folder: its config.json must describe the network the experiment built (every
// difference listed), then its weights file is read like any other.
models::StateDict read_hf_folder(torch::nn::Module& model, const config::ModelConfig& config) {
  const std::string& dir = config.init_from;
  const auto files = config::hf_folder_files(dir);
  const auto differences = hf_folder_differences(model, config, files.config);
  if (!differences.empty()) {
    throw InputError(fmt::format(
        "model.init_from = {}: its config.json describes another network than the experiment's "
        "({} difference{}):\n  {}\nchoose the model.arch preset, model.max_seq_len and tokenizer "
        "(data.tokenizer, model.vocab_size) that match the folder, or start from another folder",
        dir, differences.size(), differences.size() == 1 ? "" : "s",
        fmt::join(differences, "\n  ")));
  }
  return models::read_weights_file(files.weights);
}

}  // namespace

std::vector<std::string> load_initial_weights(torch::nn::Module& model,
                                              const config::ModelConfig& config) {
  if (config.init_from.empty()) return {};
  const std::string& path = config.init_from;
  std::error_code ec;
  const bool folder = std::filesystem::is_directory(path, ec);
  const models::StateDict entries = models::from_pytorch_state_dict(
      config.arch, folder ? read_hf_folder(model, config) : models::read_weights_file(path), path);
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
