#include "models/bert.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/nn/init.h>

#include "core/errors.h"
#include "models/bert_attention.h"

namespace batchlab::models {
namespace {

// BERT's initialization (Devlin et al.'s TF code, kept by HF): truncation aside, every weight
// matrix and embedding ~ normal(0, 0.02), biases 0, LayerNorm scale 1 and shift 0.
constexpr double kInitStd = 0.02;

void init_bert_weights(torch::nn::Module& root) {
  torch::NoGradGuard no_grad;
  // include_self = false: called from constructors, before the root is owned by a shared_ptr
  // (the roots are containers, never one of the layers below).
  for (const auto& m : root.modules(/*include_self=*/false)) {
    if (auto* linear = m->as<torch::nn::LinearImpl>()) {
      torch::nn::init::normal_(linear->weight, 0.0, kInitStd);
      if (linear->bias.defined()) torch::nn::init::zeros_(linear->bias);
    } else if (auto* embedding = m->as<torch::nn::EmbeddingImpl>()) {
      torch::nn::init::normal_(embedding->weight, 0.0, kInitStd);
    } else if (auto* norm = m->as<torch::nn::LayerNormImpl>()) {
      torch::nn::init::ones_(norm->weight);
      torch::nn::init::zeros_(norm->bias);
    }
  }
}

}  // namespace

BertEncoderImpl::BertEncoderImpl(const BertConfig& config) {
  layer = register_module("layer", torch::nn::ModuleList());
  for (int64_t i = 0; i < config.num_layers; ++i) layer->push_back(BertLayer(config));
  if (config.norm_first) {
    final_layer_norm = register_module(
        "final_layer_norm",
        torch::nn::LayerNorm(
            torch::nn::LayerNormOptions({config.hidden}).eps(config.layer_norm_eps)));
  }
}

torch::Tensor BertEncoderImpl::forward(const torch::Tensor& x, const torch::Tensor& mask) {
  torch::Tensor h = x;  // [B, T, hidden] throughout
  for (const auto& module : *layer) h = module->as<BertLayerImpl>()->forward(h, mask);
  return final_layer_norm ? final_layer_norm->forward(h) : h;
}

void BertEncoderImpl::set_attention_kernel(AttentionKernel kernel) {
  for (const auto& module : *layer) {
    module->as<BertLayerImpl>()->attention->self_attention->set_kernel(kernel);
  }
}

BertModelImpl::BertModelImpl(const BertConfig& config, bool add_pooler) : config_(config) {
  validate_bert_config(config_);
  embeddings = register_module("embeddings", BertEmbeddings(config_));
  encoder = register_module("encoder", BertEncoder(config_));
  if (add_pooler) {
    pooler = register_module("pooler", BertDense(config_.hidden, config_.hidden, 0.0));
  }
  init_bert_weights(*this);
}

BertOutput BertModelImpl::forward(const torch::Tensor& input_ids, const torch::Tensor& segment_ids,
                                  const torch::Tensor& padding_mask) {
  if (padding_mask.defined() && padding_mask.sizes() != input_ids.sizes()) {
    throw Error(fmt::format("{}: padding_mask [{}] must have input_ids' shape [{}]", config_.name,
                            fmt::join(padding_mask.sizes(), ", "),
                            fmt::join(input_ids.sizes(), ", ")));
  }
  torch::Tensor x = embeddings->forward(input_ids, segment_ids);                    // [B, T, H]
  const torch::Tensor mask = additive_padding_mask(padding_mask, x.scalar_type());  // [B,1,1,T]
  BertOutput out;
  out.sequence = encoder->forward(x, mask);  // [B, T, H]
  if (pooler) {
    // The first token ([CLS]) summarizes the sequence: [B, H].
    out.pooled = torch::tanh(pooler->dense->forward(out.sequence.select(1, 0)));
  }
  return out;
}

BertLMPredictionHeadImpl::BertLMPredictionHeadImpl(const BertConfig& config) {
  transform =
      register_module("transform", BertDense(config.hidden, config.hidden, config.layer_norm_eps));
  bias = register_parameter("bias", torch::zeros({config.vocab_size}));
}

torch::Tensor BertLMPredictionHeadImpl::forward(const torch::Tensor& hidden,
                                                const torch::Tensor& decoder_weight) {
  torch::Tensor h = torch::gelu(transform->dense->forward(hidden), "none");  // [N, H]
  // Under bf16 autocast `h` is bfloat16 here (a matrix product's output). CUDA's autocast runs
  // layer_norm in float32 by policy; LibTorch 1.13's CPU autocast has no such rule and its
  // layer_norm kernel refuses a bf16 input with float32 weights, so cast as CUDA's autocast would
  // (a no-op without autocast). The encoder's norms need nothing: their inputs are residual sums,
  // already float32.
  h = transform->layer_norm->forward(h.to(transform->layer_norm->weight.scalar_type()));
  return torch::linear(h, decoder_weight, bias);  // [N, vocab]
}

BertPretrainingHeadsImpl::BertPretrainingHeadsImpl(const BertConfig& config) {
  predictions = register_module("predictions", BertLMPredictionHead(config));
  if (config.next_sentence) {
    seq_relationship = register_module("seq_relationship", torch::nn::Linear(config.hidden, 2));
  }
  init_bert_weights(*this);
}

BertForPretraining::BertForPretraining(const BertConfig& config) : config_(config) {
  validate_bert_config(config_);
  bert_ = register_module("bert", BertModel(config_, /*add_pooler=*/config_.next_sentence));
  // Registered after the encoder so that parameters() lists them in HF's order; the decoder
  // reads bert.embeddings.word_embeddings.weight at every forward, so there is one tensor,
  // registered once, and the MLM loss's gradient accumulates into it next to the lookup's.
  cls_ = register_module("cls", BertPretrainingHeads(config_));
}

MlmOutput BertForPretraining::forward(const torch::Tensor& input_ids,
                                      const torch::Tensor& segment_ids,
                                      const torch::Tensor& padding_mask,
                                      const torch::Tensor& masked_positions) {
  BertOutput enc = bert_->forward(input_ids, segment_ids, padding_mask);
  const int64_t H = config_.hidden;
  torch::Tensor flat = enc.sequence.reshape({-1, H});  // [B*T, H]
  if (masked_positions.defined()) {
    if (masked_positions.dim() != 1 || masked_positions.scalar_type() != torch::kInt64) {
      throw Error(fmt::format("{}: masked_positions must be int64 [N], got {} [{}]", config_.name,
                              c10::toString(masked_positions.scalar_type()),
                              fmt::join(masked_positions.sizes(), ", ")));
    }
    flat = flat.index_select(0, masked_positions);  // [N, H]: the head runs only here
  }
  MlmOutput out;
  out.mlm_logits = cls_->predictions->forward(flat, decoder_weight());  // [N, vocab]
  if (cls_->seq_relationship) out.nsp_logits = cls_->seq_relationship->forward(enc.pooled);
  return out;
}

std::shared_ptr<MaskedLanguageModel> make_bert(const config::ModelConfig& model,
                                               int64_t vocab_size) {
  if (vocab_size < 0) {
    throw InputError(
        fmt::format("{}: tokenizer vocabulary size {} must be > 0 (or 0 to use "
                    "model.vocab_size)",
                    model.arch, vocab_size));
  }
  return std::make_shared<BertForPretraining>(bert_config_from(model, vocab_size));
}

}  // namespace batchlab::models
