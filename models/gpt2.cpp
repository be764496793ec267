#include "models/gpt2.h"

#include <fmt/format.h>
#include <torch/nn/init.h>
#include <torch/torch.h>

#include <cmath>

#include "core/errors.h"

namespace batchlab::models {
namespace {

constexpr double kGpt2InitStd = 0.02;  // GPT2Config.initializer_range

// GPT-2's initialization (transformers' GPT2PreTrainedModel._init_weights).
void init_gpt2_weights(torch::nn::Module& root, int64_t num_layers) {
  torch::NoGradGuard no_grad;
  for (const auto& m : root.modules(/*include_self=*/false)) {
    if (auto* conv = m->as<Gpt2Conv1DImpl>()) {
      torch::nn::init::normal_(conv->weight, 0.0, kGpt2InitStd);
      torch::nn::init::zeros_(conv->bias);
    } else if (auto* embedding = m->as<torch::nn::EmbeddingImpl>()) {
      torch::nn::init::normal_(embedding->weight, 0.0, kGpt2InitStd);
    } else if (auto* norm = m->as<torch::nn::LayerNormImpl>()) {
      torch::nn::init::ones_(norm->weight);
      torch::nn::init::zeros_(norm->bias);
    }
  }
  // Every block adds two branches to the residual stream; their last projections start smaller
  // so that the stream's variance does not grow with depth.
  const double residual_std = kGpt2InitStd / std::sqrt(2.0 * static_cast<double>(num_layers));
  for (const auto& m : root.modules(/*include_self=*/false)) {
    if (auto* attn = m->as<Gpt2AttentionImpl>()) {
      torch::nn::init::normal_(attn->c_proj->weight, 0.0, residual_std);
    } else if (auto* mlp = m->as<Gpt2MlpImpl>()) {
      torch::nn::init::normal_(mlp->c_proj->weight, 0.0, residual_std);
    }
  }
}

}  // namespace

Gpt2ModelImpl::Gpt2ModelImpl(const Gpt2Config& config) : config_(config) {
  validate_gpt2_config(config_);
  wte = register_module("wte", torch::nn::Embedding(config_.vocab_size, config_.hidden));
  wpe = register_module("wpe", torch::nn::Embedding(config_.max_positions, config_.hidden));
  h = register_module("h", torch::nn::ModuleList());
  for (int64_t i = 0; i < config_.num_layers; ++i) h->push_back(Gpt2Block(config_));
  ln_f = register_module(
      "ln_f", torch::nn::LayerNorm(
                  torch::nn::LayerNormOptions({config_.hidden}).eps(config_.layer_norm_eps)));
  init_gpt2_weights(*this, config_.num_layers);
}

torch::Tensor Gpt2ModelImpl::forward(const torch::Tensor& input_ids) {
  if (input_ids.dim() != 2) {
    throw Error(fmt::format("{}: input_ids must be [B, T], got {} dimensions", config_.name,
                            input_ids.dim()));
  }
  const int64_t t = input_ids.size(1);
  if (t > config_.max_positions) {
    throw InputError(fmt::format(
        "{}: a sequence of {} tokens is longer than model.max_seq_len = {} (the rows of the "
        "position embedding); raise model.max_seq_len or shorten data.seq_len",
        config_.name, t, config_.max_positions));
  }
  const torch::Tensor positions = torch::arange(t, input_ids.options());  // [T], broadcast over B
  torch::Tensor x = wte->forward(input_ids) + wpe->forward(positions);    // [B, T, H]
  x = torch::dropout(x, config_.dropout, is_training());
  for (const auto& block : *h) x = block->as<Gpt2BlockImpl>()->forward(x);
  return ln_f->forward(x);
}

void Gpt2ModelImpl::set_attention_kernel(AttentionKernel kernel) {
  for (const auto& block : *h) block->as<Gpt2BlockImpl>()->attn->set_kernel(kernel);
}

Gpt2LMHeadModel::Gpt2LMHeadModel(const Gpt2Config& config) : config_(config) {
  validate_gpt2_config(config_);
  transformer_ = register_module("transformer", Gpt2Model(config_));
}

torch::Tensor Gpt2LMHeadModel::forward(const torch::Tensor& input_ids) {
  // The output layer reads the token embedding at every forward: one tensor, whose gradient is
  // the lookup's plus the logits'.
  return torch::linear(transformer_->forward(input_ids), lm_head_weight());  // [B, T, V]
}

std::shared_ptr<CausalLanguageModel> make_gpt2(const config::ModelConfig& model,
                                               int64_t vocab_size) {
  if (vocab_size < 0) {
    throw InputError(
        fmt::format("{}: tokenizer vocabulary size {} must be > 0 (or 0 to use model.vocab_size)",
                    model.arch, vocab_size));
  }
  return std::make_shared<Gpt2LMHeadModel>(gpt2_config_from(model, vocab_size));
}

}  // namespace batchlab::models
