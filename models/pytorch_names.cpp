#include "models/pytorch_names.h"

#include <fmt/format.h>
#include <torch/types.h>

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "core/errors.h"
#include "models/bert_config.h"
#include "models/gpt2_config.h"

namespace batchlab::models {
namespace {

constexpr const char* kWordEmbeddings = "bert.embeddings.word_embeddings.weight";
constexpr const char* kPredictionBias = "cls.predictions.bias";
constexpr const char* kDecoderWeight = "cls.predictions.decoder.weight";
constexpr const char* kDecoderBias = "cls.predictions.decoder.bias";
constexpr const char* kPositionIds = "bert.embeddings.position_ids";
constexpr const char* kGpt2TokenEmbedding = "transformer.wte.weight";
constexpr const char* kGpt2LmHead = "lm_head.weight";

std::optional<torch::Tensor> find(const StateDict& entries, const std::string& name) {
  for (const auto& [key, tensor] : entries) {
    if (key == name) return tensor;
  }
  return std::nullopt;
}

// A Hugging Face entry that is another entry under a second name: drop it, after checking that it
// is the same tensor in this file (a decoder trained untied cannot be represented here).
void drop_tied(StateDict& entries, const std::string& alias, const std::string& original,
               const std::string& source) {
  const auto copy = find(entries, alias);
  if (!copy) return;
  const auto kept = find(entries, original);
  if (kept && (kept->sizes() != copy->sizes() || !torch::equal(*kept, *copy))) {
    throw InputError(fmt::format(
        "{}: {} differs from {}; batchlab's BERT and GPT-2 tie the two (as the originals and "
        "Hugging Face do), so a file whose output layer was trained untied cannot be loaded",
        source, alias, original));
  }
  entries.erase(std::remove_if(entries.begin(), entries.end(),
                               [&](const auto& e) { return e.first == alias; }),
                entries.end());
}

// Inserts the tied decoder entries after the last cls.predictions entry, where Hugging Face's
// BertLMPredictionHead lists them (transform, then decoder).
void add_decoder(StateDict& entries) {
  const auto embedding = find(entries, kWordEmbeddings);
  const auto bias = find(entries, kPredictionBias);
  if (!embedding || !bias) return;  // not a BertForPretraining (no MLM head to export)
  auto last = std::find_if(entries.rbegin(), entries.rend(),
                           [](const auto& e) { return e.first.rfind("cls.predictions.", 0) == 0; });
  auto at = last.base();
  at = entries.insert(at, {kDecoderWeight, *embedding});
  entries.insert(at + 1, {kDecoderBias, *bias});
}

// A GPT-2 file as transformers' GPT2LMHeadModel names it: a GPT2Model state_dict (OpenAI's
// released checkpoints: wte.weight, h.0.*, ...) gets the "transformer." prefix, and the causal-mask
// buffers older transformers saved (h.N.attn.bias, h.N.attn.masked_bias: constants, not weights)
// are dropped.
void gpt2_from_pytorch(StateDict& entries, const std::string& source) {
  const bool bare =
      std::none_of(entries.begin(), entries.end(),
                   [](const auto& e) { return e.first.rfind("transformer.", 0) == 0; }) &&
      find(entries, "wte.weight").has_value();
  if (bare) {
    for (auto& e : entries) {
      if (e.first != kGpt2LmHead) e.first = "transformer." + e.first;
    }
  }
  const auto is_mask_buffer = [](const std::string& name) {
    const auto ends_with = [&](const std::string& suffix) {
      return name.size() >= suffix.size() &&
             name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    return ends_with(".attn.bias") || ends_with(".attn.masked_bias");
  };
  entries.erase(std::remove_if(entries.begin(), entries.end(),
                               [&](const auto& e) { return is_mask_buffer(e.first); }),
                entries.end());
  drop_tied(entries, kGpt2LmHead, kGpt2TokenEmbedding, source);
}

}  // namespace

std::string pytorch_naming(const std::string& arch) {
  if (is_bert_arch(arch) || is_gpt2_arch(arch)) return "huggingface";
  static const std::vector<std::string> torchvision = {"resnet18", "resnet34", "resnet50",
                                                       "resnet101", "resnet152"};
  if (std::find(torchvision.begin(), torchvision.end(), arch) != torchvision.end()) {
    return "torchvision";
  }
  return "batchlab";
}

namespace {

// torchvision's ResNet with the stem these weights have: conv1 [64, C, k, k] (k = 7: the ImageNet
// stem, stride 2, then a max pool; k = 3: the small stem, stride 1, no pool) and fc [N, F].
PytorchModule torchvision_resnet(const std::string& arch, const StateDict& entries) {
  const auto conv1 = find(entries, "conv1.weight");
  const auto fc = find(entries, "fc.weight");
  if (!conv1 || !fc || conv1->dim() != 4 || fc->dim() != 2) {
    return {fmt::format("no PyTorch module: the {} weights lack conv1 or fc", arch), "", false};
  }
  const int64_t channels = conv1->size(1);
  const int64_t kernel = conv1->size(2);
  const int64_t classes = fc->size(0);
  const std::string make = fmt::format("torchvision.models.{}(num_classes={})", arch, classes);
  PytorchModule out;
  out.promised = true;
  out.python = "import torch, torchvision\nmodel = " + make + "\n";
  if (kernel == 7 && channels == 3) {
    out.describe = make + ", as torchvision builds it";
    return out;
  }
  const bool small = kernel == 3;
  const std::string conv =
      fmt::format("torch.nn.Conv2d({}, {}, kernel_size={}, stride={}, padding={}, bias=False)",
                  channels, conv1->size(0), kernel, small ? 1 : 2, small ? 1 : 3);
  out.python += "model.conv1 = " + conv + "\n";
  if (small) out.python += "model.maxpool = torch.nn.Identity()\n";
  out.describe = fmt::format(
      "{} with conv1 replaced by {}{} ({}); torchvision's own {} (a 7x7 stride-2 conv1 on 3 "
      "channels, then a max pool) refuses these weights",
      make, conv, small ? " and maxpool by torch.nn.Identity()" : "",
      small ? "the small stem, model.stem: a 3x3 stride-1 conv and no max pool"
            : fmt::format("{} input channel{}", channels, channels == 1 ? "" : "s"),
      arch);
  return out;
}

}  // namespace

PytorchModule pytorch_module(const std::string& arch, const StateDict& entries) {
  const std::string naming = pytorch_naming(arch);
  if (naming == "torchvision") return torchvision_resnet(arch, entries);
  if (naming == "huggingface" && is_gpt2_arch(arch)) {
    return {
        "a module with the structure and names of Hugging Face's GPT2LMHeadModel, sized as the "
        "run's model (config_toml: model.arch, vocab_size, max_seq_len); lm_head.weight is the "
        "tied transformer.wte.weight",
        "", true};
  }
  if (naming == "huggingface") {
    return {
        "a module with the structure and names of Hugging Face's BertForMaskedLM (or "
        "BertForPreTraining with model.next_sentence), sized as the run's model (config_toml: "
        "model.arch, vocab_size, max_seq_len)",
        "", true};
  }
  return {fmt::format("none: model.arch = \"{}\" is batchlab's own network, which no PyTorch "
                      "library builds; the names are those of batchlab's module",
                      arch),
          "", false};
}

StateDict to_pytorch_state_dict(const std::string& arch, const torch::nn::Module& model) {
  StateDict entries = state_dict(model);
  if (is_bert_arch(arch)) add_decoder(entries);
  // GPT2LMHeadModel lists its output layer, tied to the token embedding, last.
  if (const auto wte = find(entries, kGpt2TokenEmbedding); is_gpt2_arch(arch) && wte) {
    entries.emplace_back(kGpt2LmHead, *wte);
  }
  return entries;
}

StateDict from_pytorch_state_dict(const std::string& arch, StateDict entries,
                                  const std::string& source) {
  if (is_gpt2_arch(arch)) {
    gpt2_from_pytorch(entries, source);
    return entries;
  }
  if (!is_bert_arch(arch)) return entries;
  drop_tied(entries, kDecoderWeight, kWordEmbeddings, source);
  drop_tied(entries, kDecoderBias, kPredictionBias, source);
  entries.erase(std::remove_if(entries.begin(), entries.end(),
                               [](const auto& e) { return e.first == kPositionIds; }),
                entries.end());
  return entries;
}

}  // namespace batchlab::models
