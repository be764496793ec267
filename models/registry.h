// The models table: architecture name (model.arch) -> description, factory and cost model. Adding
// an architecture is one entry in registry.cpp's table; `batchlab models` and the config validation
// read the names from here.
//
// Image classifiers: small_resnet (Fashion-MNIST scale; model.width), resnet18/34/50/101/152
// (torchvision-identical, models/resnet.h; model.stem), resnet20/32/56 (CIFAR ResNets of He et al.,
// models/cifar_resnet.h). All of them take model.zero_init_residual and batch.bn_group.
#pragma once

#include <torch/nn/module.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/config/model_config.h"
#include "models/causal_lm.h"
#include "models/masked_lm.h"
#include "models/network.h"

namespace batchlab::models {

struct ModelInfo {
  std::string name;         // the model.arch value
  std::string description;  // one line for `batchlab models`
  // The reference input at which `batchlab models` reports parameter counts and FLOPs (the
  // architecture's usual dataset: 1x28x28 and 10 classes for Fashion-MNIST, 3x224x224 and 1000 for
  // ImageNet).
  int64_t channels = 1;
  int64_t height = 28;
  int64_t width = 28;
  int64_t num_classes = 10;
  // "image" (make_image_classifier), "text" (make_masked_lm: the BERT family) or "causal_lm"
  // (make_causal_lm: the GPT-2 family); the reference input of both language-model families is
  // one sequence of seq_len tokens.
  std::string family = "image";
  int64_t seq_len = 0;
};

// One line of `batchlab models`: the architecture at its reference input with default settings.
struct ModelSummary {
  ModelInfo info;
  int64_t parameters = 0;      // scalar parameters (a tied weight counted once)
  int64_t training_flops = 0;  // per sample (image) or per sequence (text), see ModelCost
  std::string input;           // "3x224x224, 1000 classes" or "128 tokens, 30522-token vocabulary"
};

// Builds the image models to count their parameters (resnet152: about half a second); the BERT and
// GPT-2 families are counted from their sizes (bert_large would need 1.3 GB). The GPT-2 presets
// are priced at GPT-2's own vocabulary (50257) and their reference context.
ModelSummary summarize_model(const ModelInfo& info);

// Every architecture in the table, in table order.
std::vector<ModelInfo> list_models();

// Builds model.arch for inputs [B, channels, height, width] and num_classes outputs.
// model.num_classes, when non-zero, must equal num_classes (the dataset's). Throws InputError for
// an unknown arch
// (`model.arch = "resnt50": unknown architecture; valid: ...`) or unusable sizes. `bn_group`
// (batch.bn_group) makes every batch norm a ghost batch norm over groups of that many samples.
std::shared_ptr<ImageClassifier> make_image_classifier(const config::ModelConfig& model,
                                                       int64_t channels, int64_t height,
                                                       int64_t width, int64_t num_classes,
                                                       int64_t bn_group = 0);

// Builds a masked-language model (model.arch = bert_*) with model.vocab_size tokens, or
// `vocab_size` when non-zero (the trained tokenizer's). Throws InputError like
// make_image_classifier, and for an image architecture.
std::shared_ptr<MaskedLanguageModel> make_masked_lm(const config::ModelConfig& model,
                                                    int64_t vocab_size = 0);

// Builds a causal language model (model.arch = gpt2_*) with model.vocab_size tokens, or
// `vocab_size` when non-zero (the trained tokenizer's), and model.max_seq_len positions. Throws
// InputError like make_masked_lm, naming the causal-LM architectures.
std::shared_ptr<CausalLanguageModel> make_causal_lm(const config::ModelConfig& model,
                                                    int64_t vocab_size = 0);

// Whether model.arch is a causal language model (the GPT-2 family): the text data set then trains
// it on next-token prediction instead of masked-LM.
bool is_causal_lm_arch(const std::string& arch);

// Number of scalar parameters (weights, biases, BN scales and shifts; buffers such as BN running
// statistics are not parameters), whether or not they require gradients.
int64_t count_parameters(const torch::nn::Module& module);

// Compute per sample, from the architecture's shapes alone (nothing is allocated).
// Convention: a multiply-accumulate (MAC) of a convolution or linear layer is 2 FLOPs; elementwise
// work (BN, ReLU, residual additions, pooling) is not counted; the backward pass costs twice the
// forward (gradients with respect to activations and to weights), so a training step costs 3x the
// forward: training_flops = 3 x 2 x forward_macs (Kaplan et al. 2020; the convention of the
// large-batch literature's "FLOPs per example").
struct ModelCost {
  int64_t forward_macs = 0;
  int64_t forward_flops = 0;   // 2 x forward_macs
  int64_t training_flops = 0;  // 3 x forward_flops
};

// Throws InputError like make_image_classifier.
ModelCost estimate_cost(const config::ModelConfig& model, int64_t channels, int64_t height,
                        int64_t width, int64_t num_classes);

// Compute per sequence of `seq_len` tokens of a masked-language model (model.arch = bert_*), the
// MLM head on BERT's 15% of the tokens (models/bert_config.h bert_forward_macs).
ModelCost estimate_masked_lm_cost(const config::ModelConfig& model, int64_t seq_len,
                                  int64_t vocab_size = 0);

// Parameters of make_masked_lm(model, vocab_size), computed from the sizes without building it.
int64_t masked_lm_parameters(const config::ModelConfig& model, int64_t vocab_size = 0);

// Compute per sequence of `seq_len` tokens of a causal language model (model.arch = gpt2_*), the
// next-token logits at every position (models/gpt2_config.h gpt2_forward_macs).
ModelCost estimate_causal_lm_cost(const config::ModelConfig& model, int64_t seq_len,
                                  int64_t vocab_size = 0);

// estimate_cost(...).training_flops: FLOPs of one training step per sample.
int64_t training_flops_per_sample(const config::ModelConfig& model, int64_t channels,
                                  int64_t height, int64_t width, int64_t num_classes);

}  // namespace batchlab::models
