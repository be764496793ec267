#include "models/registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>

#include "core/errors.h"
#include "models/bert.h"
#include "models/bert_config.h"
#include "models/cifar_resnet.h"
#include "models/gpt2.h"
#include "models/gpt2_config.h"
#include "models/resnet.h"
#include "models/small_resnet.h"

namespace batchlab::models {
namespace {

// What a factory is built for: one input sample's shape and the number of outputs.
struct InputSpec {
  int64_t channels = 0;
  int64_t height = 0;
  int64_t width = 0;
  int64_t num_classes = 0;
  int64_t bn_group = 0;  // not an input property, but physical-batch settings reach the model here
};

// One row of the models table. `forward_macs` works from shapes alone so that `batchlab models` can
// price ResNet-152 without allocating it.
struct Entry {
  ModelInfo info;
  std::function<std::shared_ptr<ImageClassifier>(const config::ModelConfig&, const InputSpec&)>
      make;
  std::function<int64_t(const config::ModelConfig&, const InputSpec&)> forward_macs;
};

SmallResNetOptions small_resnet_options(const config::ModelConfig& m, const InputSpec& in) {
  SmallResNetOptions o;
  o.in_channels = in.channels;
  o.num_classes = in.num_classes;
  o.width = m.width;
  o.zero_init_residual = m.zero_init_residual;
  o.bn_group = in.bn_group;
  return o;
}

// model.zero_init_residual, model.stem and batch.bn_group reach the ImageNet ResNets; model.width
// does not (their widths are torchvision's).
ResNetOptions resnet_options(int64_t depth, const config::ModelConfig& m, const InputSpec& in) {
  ResNetOptions o;
  o.depth = depth;
  o.in_channels = in.channels;
  o.num_classes = in.num_classes;
  o.stem = resolve_stem(m.stem, in.height, in.width);
  o.zero_init_residual = m.zero_init_residual;
  o.bn_group = in.bn_group;
  return o;
}

CifarResNetOptions cifar_resnet_options(int64_t depth, const config::ModelConfig& m,
                                        const InputSpec& in) {
  CifarResNetOptions o;
  o.depth = depth;
  o.in_channels = in.channels;
  o.num_classes = in.num_classes;
  o.zero_init_residual = m.zero_init_residual;
  o.bn_group = in.bn_group;
  return o;
}

// A torchvision ResNet, priced at ImageNet's 3x224x224 and 1000 classes.
Entry resnet_entry(int64_t depth, const std::string& blocks) {
  return {{fmt::format("resnet{}", depth),
           fmt::format("ResNet-{}, torchvision-identical (v1.5, {}); model.stem imagenet, small "
                       "or auto",
                       depth, blocks),
           /*channels=*/3, /*height=*/224, /*width=*/224, /*num_classes=*/1000},
          [depth](const config::ModelConfig& m,
                  const InputSpec& in) -> std::shared_ptr<ImageClassifier> {
            return std::make_shared<ResNet>(resnet_options(depth, m, in));
          },
          [depth](const config::ModelConfig& m, const InputSpec& in) {
            return ResNet::forward_macs(resnet_options(depth, m, in), in.height, in.width);
          }};
}

// A CIFAR ResNet of He et al. 2016 sec. 4.2, priced at CIFAR-10's 3x32x32 and 10 classes.
Entry cifar_resnet_entry(int64_t depth) {
  return {{fmt::format("resnet{}", depth),
           fmt::format("CIFAR ResNet-{} (He et al. 2016 sec. 4.2: {} BasicBlocks per stage at "
                       "16/32/64 channels, option-A shortcuts)",
                       depth, (depth - 2) / 6),
           /*channels=*/3, /*height=*/32, /*width=*/32, /*num_classes=*/10},
          [depth](const config::ModelConfig& m,
                  const InputSpec& in) -> std::shared_ptr<ImageClassifier> {
            return std::make_shared<CifarResNet>(cifar_resnet_options(depth, m, in));
          },
          [depth](const config::ModelConfig& m, const InputSpec& in) {
            return CifarResNet::forward_macs(cifar_resnet_options(depth, m, in), in.height,
                                             in.width);
          }};
}

// The table. To add an architecture, add an entry here (and its files under models/).
const std::vector<Entry>& table() {
  static const std::vector<Entry> entries = {
      {{"small_resnet",
        "residual CNN for small images (Fashion-MNIST): thin 3x3 stem, 2 BasicBlocks at 1/2 "
        "resolution (model.width channels, default 32) and 2 at 1/4 (2 x width)",
        /*channels=*/1, /*height=*/28, /*width=*/28, /*num_classes=*/10},
       [](const config::ModelConfig& m, const InputSpec& in) -> std::shared_ptr<ImageClassifier> {
         return std::make_shared<SmallResNet>(small_resnet_options(m, in));
       },
       [](const config::ModelConfig& m, const InputSpec& in) {
         return SmallResNet::forward_macs(small_resnet_options(m, in), in.height, in.width);
       }},
      resnet_entry(18, "BasicBlocks 2-2-2-2"),
      resnet_entry(34, "BasicBlocks 3-4-6-3"),
      resnet_entry(50, "Bottlenecks 3-4-6-3"),
      resnet_entry(101, "Bottlenecks 3-4-23-3"),
      resnet_entry(152, "Bottlenecks 3-8-36-3"),
      cifar_resnet_entry(20),
      cifar_resnet_entry(32),
      cifar_resnet_entry(56),
  };
  return entries;
}

// Every model.arch, image models first.
std::vector<std::string> all_names() {
  std::vector<std::string> names;
  for (const Entry& e : table()) names.push_back(e.info.name);
  for (const BertPreset& p : bert_presets()) names.push_back(p.name);
  for (const Gpt2Preset& p : gpt2_presets()) names.push_back(p.name);
  return names;
}

// Parameters of BertForPretraining as make_bert builds it (checked against the built module in
// tests/models/registry_test.cpp). The MLM decoder's weight is the token embedding: counted once.
int64_t bert_parameters(const BertConfig& c) {
  const int64_t h = c.hidden;
  const int64_t inner = c.intermediate;
  const int64_t v = c.vocab_size;
  int64_t n = (v + c.max_seq_len + c.type_vocab_size) * h + 2 * h;  // embeddings and their LN
  // Per layer: Q, K, V, output projection; attention LN; FFN in and out; output LN.
  n += c.num_layers * (4 * (h * h + h) + 2 * h + (h * inner + inner) + (inner * h + h) + 2 * h);
  if (c.norm_first) n += 2 * h;                         // the final LN of a pre-LN encoder
  if (c.next_sentence) n += (h * h + h) + (2 * h + 2);  // pooler and next-sentence classifier
  n += (h * h + h) + 2 * h + v;                         // MLM transform, its LN, decoder bias
  return n;
}

// Looks up model.arch and checks the sizes; the error lists every valid name.
const Entry& find_entry(const config::ModelConfig& model, InputSpec& in) {
  const Entry* found = nullptr;
  for (const Entry& e : table()) {
    if (e.info.name == model.arch) found = &e;
  }
  if (found == nullptr) {
    if (is_bert_arch(model.arch) || is_gpt2_arch(model.arch)) {
      std::vector<std::string> names;
      for (const Entry& e : table()) names.push_back(e.info.name);
      throw InputError(
          fmt::format("model.arch = \"{}\": a {} model; an image data set needs an image "
                      "architecture: {}",
                      model.arch, is_bert_arch(model.arch) ? "masked-language" : "causal language",
                      fmt::join(names, ", ")));
    }
    throw InputError(fmt::format("model.arch = \"{}\": unknown architecture; valid: {}", model.arch,
                                 fmt::join(all_names(), ", ")));
  }
  if (in.channels < 1 || in.height < 1 || in.width < 1 || in.num_classes < 1) {
    throw InputError(
        fmt::format("model.arch = \"{}\": input {}x{}x{} with {} classes: every size must be >= 1",
                    model.arch, in.channels, in.height, in.width, in.num_classes));
  }
  if (model.num_classes != 0 && model.num_classes != in.num_classes) {
    throw InputError(fmt::format(
        "model.num_classes = {}: the dataset has {} classes (0 = take it from the dataset)",
        model.num_classes, in.num_classes));
  }
  return *found;
}

}  // namespace

std::vector<ModelInfo> list_models() {
  std::vector<ModelInfo> out;
  for (const Entry& e : table()) out.push_back(e.info);
  for (const BertPreset& p : bert_presets()) {
    ModelInfo info;
    info.name = p.name;
    info.description = p.description;
    info.family = "text";
    info.channels = info.height = info.width = info.num_classes = 0;
    info.seq_len = 128;  // phase 1 of BERT pretraining
    out.push_back(info);
  }
  for (const Gpt2Preset& p : gpt2_presets()) {
    ModelInfo info;
    info.name = p.name;
    info.description = p.description;
    info.family = "causal_lm";
    info.channels = info.height = info.width = info.num_classes = 0;
    info.seq_len = p.positions;
    out.push_back(info);
  }
  return out;
}

ModelSummary summarize_model(const ModelInfo& info) {
  ModelSummary s;
  s.info = info;
  config::ModelConfig cfg;
  cfg.arch = info.name;
  if (info.family == "causal_lm") {
    cfg.max_seq_len = info.seq_len;
    const Gpt2Config gpt = gpt2_config_from(cfg, kGpt2Vocabulary);
    s.parameters = gpt2_parameters(gpt);
    s.training_flops = estimate_causal_lm_cost(cfg, info.seq_len, kGpt2Vocabulary).training_flops;
    s.input = fmt::format("{} tokens, {}-token vocabulary (GPT-2's)", info.seq_len, gpt.vocab_size);
    return s;
  }
  if (info.family == "text") {
    const BertConfig bert = bert_config_from(cfg);
    s.parameters = bert_parameters(bert);
    s.training_flops = estimate_masked_lm_cost(cfg, info.seq_len).training_flops;
    s.input = fmt::format("{} tokens, {}-token vocabulary", info.seq_len, bert.vocab_size);
    return s;
  }
  torch::NoGradGuard no_grad;
  s.parameters = count_parameters(
      *make_image_classifier(cfg, info.channels, info.height, info.width, info.num_classes));
  s.training_flops =
      training_flops_per_sample(cfg, info.channels, info.height, info.width, info.num_classes);
  s.input =
      fmt::format("{}x{}x{}, {} classes", info.channels, info.height, info.width, info.num_classes);
  return s;
}

std::shared_ptr<ImageClassifier> make_image_classifier(const config::ModelConfig& model,
                                                       int64_t channels, int64_t height,
                                                       int64_t width, int64_t num_classes,
                                                       int64_t bn_group) {
  InputSpec in{channels, height, width, num_classes, bn_group};
  return find_entry(model, in).make(model, in);
}

int64_t count_parameters(const torch::nn::Module& module) {
  int64_t n = 0;
  for (const auto& p : module.parameters(/*recurse=*/true)) n += p.numel();
  return n;
}

ModelCost estimate_cost(const config::ModelConfig& model, int64_t channels, int64_t height,
                        int64_t width, int64_t num_classes) {
  InputSpec in{channels, height, width, num_classes};
  ModelCost cost;
  cost.forward_macs = find_entry(model, in).forward_macs(model, in);
  cost.forward_flops = 2 * cost.forward_macs;
  cost.training_flops = 3 * cost.forward_flops;
  return cost;
}

int64_t training_flops_per_sample(const config::ModelConfig& model, int64_t channels,
                                  int64_t height, int64_t width, int64_t num_classes) {
  return estimate_cost(model, channels, height, width, num_classes).training_flops;
}

// ------------------------------------------------------------------------------------------------
// Masked language models (model.arch = bert_*): the presets live in models/bert_config.h.
// ------------------------------------------------------------------------------------------------

std::shared_ptr<MaskedLanguageModel> make_masked_lm(const config::ModelConfig& model,
                                                    int64_t vocab_size) {
  if (!is_bert_arch(model.arch)) {
    const bool image = std::any_of(table().begin(), table().end(),
                                   [&](const Entry& e) { return e.info.name == model.arch; });
    std::vector<std::string> names;
    for (const BertPreset& p : bert_presets()) names.push_back(p.name);
    throw InputError(fmt::format(
        "model.arch = \"{}\": {}; masked-language modelling needs one of: {}", model.arch,
        image                      ? "an image classifier"
        : is_gpt2_arch(model.arch) ? "a causal language model (next-token prediction)"
                                   : "unknown architecture",
        fmt::join(names, ", ")));
  }
  return make_bert(model, vocab_size);
}

int64_t masked_lm_parameters(const config::ModelConfig& model, int64_t vocab_size) {
  return bert_parameters(bert_config_from(model, vocab_size));
}

ModelCost estimate_masked_lm_cost(const config::ModelConfig& model, int64_t seq_len,
                                  int64_t vocab_size) {
  const BertConfig bert = bert_config_from(model, vocab_size);
  ModelCost cost;
  cost.forward_macs = bert_forward_macs(bert, seq_len, default_mlm_positions(seq_len));
  cost.forward_flops = 2 * cost.forward_macs;
  cost.training_flops = 3 * cost.forward_flops;
  return cost;
}

// ------------------------------------------------------------------------------------------------
// Causal language models (model.arch = gpt2_*): the presets live in models/gpt2_config.h.
// ------------------------------------------------------------------------------------------------

bool is_causal_lm_arch(const std::string& arch) { return is_gpt2_arch(arch); }

std::shared_ptr<CausalLanguageModel> make_causal_lm(const config::ModelConfig& model,
                                                    int64_t vocab_size) {
  if (!is_causal_lm_arch(model.arch)) {
    std::vector<std::string> names;
    for (const Gpt2Preset& p : gpt2_presets()) names.push_back(p.name);
    throw InputError(fmt::format(
        "model.arch = \"{}\": not a causal language model; next-token prediction needs one of: {}",
        model.arch, fmt::join(names, ", ")));
  }
  return make_gpt2(model, vocab_size);
}

ModelCost estimate_causal_lm_cost(const config::ModelConfig& model, int64_t seq_len,
                                  int64_t vocab_size) {
  ModelCost cost;
  cost.forward_macs = gpt2_forward_macs(gpt2_config_from(model, vocab_size), seq_len);
  cost.forward_flops = 2 * cost.forward_macs;
  cost.training_flops = 3 * cost.forward_flops;
  return cost;
}

}  // namespace batchlab::models
