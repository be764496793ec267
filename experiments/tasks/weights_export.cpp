#include "experiments/tasks/weights_export.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "core/errors.h"
#include "experiments/data/hf_tokenizer_files.h"
#include "experiments/data/tokenizer.h"
#include "experiments/tasks/causal_lm_task.h"
#include "experiments/tasks/masked_lm_task.h"
#include "experiments/tasks/task_factory.h"
#include "models/bert.h"
#include "models/gpt2.h"
#include "models/hf_bert_config.h"
#include "models/hf_gpt2_config.h"
#include "models/pytorch_names.h"
#include "models/safetensors.h"
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

std::string as_string(const std::vector<char>& bytes) {
  return std::string(bytes.begin(), bytes.end());
}

// Hugging Face's loaders refuse a safetensors file whose metadata does not say "pt".
const std::map<std::string, std::string> kSafetensorsMetadata = {{"format", "pt"}};

// `entries` without those named in `names` (tied tensors save_pretrained leaves out).
models::StateDict without(const models::StateDict& entries, const std::vector<std::string>& names) {
  models::StateDict kept;
  for (const auto& e : entries) {
    if (std::find(names.begin(), names.end(), e.first) == names.end()) kept.push_back(e);
  }
  return kept;
}

// The run's SentencePiece tokenizer as tokenizer.json and its configs.
std::vector<ExportedFile> tokenizer_files(const data::TextCorpus& corpus, int64_t max_length) {
  const std::string tokenizer = corpus.tokenizer->path();
  const auto spm = data::read_sentencepiece_model_file(tokenizer);
  const auto tok = data::hf_tokenizer_files(spm, tokenizer, max_length);
  return {{"tokenizer.json", tok.tokenizer_json},
          {"tokenizer_config.json", tok.tokenizer_config_json},
          {"special_tokens_map.json", tok.special_tokens_map_json}};
}

// The save_pretrained folder of a GPT-2 run: config.json, the weights without lm_head.weight
// (tied to transformer.wte.weight; from_pretrained ties them again) and the tokenizer.
std::vector<ExportedFile> gpt2_huggingface_files(const models::Gpt2LMHeadModel& gpt2,
                                                 const CausalLmTask& task,
                                                 const models::StateDict& entries) {
  // Documents end in [SEP] in batchlab's token stream: GPT-2's <|endoftext|> role.
  const models::Gpt2SpecialTokens tokens{data::kSepId, data::kSepId, data::kPadId};
  std::vector<ExportedFile> files = {
      {"config.json", models::hf_gpt2_config_json(gpt2.config(), tokens)},
      {"model.safetensors", as_string(models::safetensors_bytes(
                                without(entries, {"lm_head.weight"}), kSafetensorsMetadata))}};
  for (auto& f : tokenizer_files(task.corpus(), gpt2.config().max_positions)) {
    files.push_back(std::move(f));
  }
  return files;
}

// The save_pretrained folder of a BERT or GPT-2 run: what transformers writes for the same network.
std::vector<ExportedFile> huggingface_files(const config::ModelConfig& model, train::Task& task,
                                            const models::StateDict& entries) {
  const auto* gpt2 = dynamic_cast<const models::Gpt2LMHeadModel*>(&task.model());
  const auto* clm = dynamic_cast<const CausalLmTask*>(&task);
  if (gpt2 != nullptr && clm != nullptr) return gpt2_huggingface_files(*gpt2, *clm, entries);
  const auto* bert = dynamic_cast<const models::BertForPretraining*>(&task.model());
  const auto* mlm = dynamic_cast<const MaskedLmTask*>(&task);
  if (bert == nullptr || mlm == nullptr) {
    throw InputError(fmt::format(
        "--format hf: model.arch = \"{}\" is neither a BERT nor a GPT-2; a Hugging Face folder "
        "holds a BERT (model.arch = \"bert_*\") or GPT-2 (\"gpt2_*\") run: export pt or "
        "safetensors instead",
        model.arch));
  }
  if (model.norm_first) {
    throw InputError(
        "--format hf: the run used pre-LN blocks (model.norm_first = true), which Hugging Face's "
        "BertModel (post-LN) does not compute; export pt or safetensors instead");
  }
  // save_pretrained leaves out the decoder tied to the embeddings (and its bias, tied to
  // cls.predictions.bias): from_pretrained ties them again.
  const models::StateDict kept =
      without(entries, {"cls.predictions.decoder.weight", "cls.predictions.decoder.bias"});
  std::vector<ExportedFile> files = {
      {"config.json", models::hf_bert_config_json(bert->config())},
      {"model.safetensors", as_string(models::safetensors_bytes(kept, kSafetensorsMetadata))}};
  for (auto& f : tokenizer_files(mlm->corpus(), bert->config().max_seq_len)) {
    files.push_back(std::move(f));
  }
  return files;
}

}  // namespace

ExportFormat export_format(const std::string& format, const std::string& out) {
  if (format == "pt") return ExportFormat::pytorch;
  if (format == "safetensors") return ExportFormat::safetensors;
  if (format == "hf") return ExportFormat::huggingface;
  if (format.empty()) {
    return models::is_safetensors_path(out) ? ExportFormat::safetensors : ExportFormat::pytorch;
  }
  throw InputError(fmt::format(
      "--format {}: expected pt (torch.save), safetensors or hf (a Hugging Face save_pretrained "
      "folder of a BERT run)",
      format));
}

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
                               const std::string& checkpoint_file, ExportFormat format) {
  config::ModelConfig model = config.model;
  model.init_from.clear();  // the weights come from the checkpoint
  const auto task = make_task(model, config.data, config.batch.bn_group, torch::kCPU);
  ExportedWeights exported;
  exported.step = train::load_model_weights(checkpoint_file, run_id, task->model());
  const models::StateDict entries = models::to_pytorch_state_dict(model.arch, task->model());
  switch (format) {
    case ExportFormat::pytorch:
      exported.files = {{"", as_string(models::state_dict_bytes(entries))}};
      break;
    case ExportFormat::safetensors:
      exported.files = {{"", as_string(models::safetensors_bytes(entries, kSafetensorsMetadata))}};
      break;
    case ExportFormat::huggingface:
      exported.files = huggingface_files(model, *task, entries);
      break;
  }
  exported.tensors = static_cast<int64_t>(entries.size());
  exported.names = models::pytorch_naming(model.arch);
  exported.module = models::pytorch_module(model.arch, entries);
  if (exported.names == "huggingface" && model.norm_first && !models::is_gpt2_arch(model.arch)) {
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
