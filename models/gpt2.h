// The GPT-2 family (Radford et al. 2019) for causal language modelling: the decoder stack
// (GPT2Model: token and learned position embeddings, N pre-LN blocks, a final LayerNorm) and
// Gpt2LMHeadModel, the CausalLanguageModel the causal-LM task trains, whose output layer IS the
// token embedding (tied, as in GPT-2).
//
// Parameter names and shapes are Hugging Face's GPT2LMHeadModel's, so its save_pretrained folders
// load by name and batchlab's state_dict loads strictly into it:
//   transformer.wte.weight [V, H], transformer.wpe.weight [P, H]
//   transformer.h.N.*                          (models/gpt2_block.h lists a block's names)
//   transformer.ln_f.{weight,bias}
// Hugging Face's lm_head.weight is the tied token embedding: not a separate parameter here
// (models/pytorch_names.h adds it on export for a strict load_state_dict and drops it on import).
//
// Initialization as GPT-2 (and transformers): weights and embeddings normal(0, 0.02), biases 0,
// LayerNorm 1 and 0, and the two projections that end a residual branch (attn.c_proj,
// mlp.c_proj) normal(0, 0.02 / sqrt(2 x layers)), GPT-2's scaling for the residual path's depth.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>
#include <memory>

#include "core/config/model_config.h"
#include "models/causal_lm.h"
#include "models/gpt2_block.h"
#include "models/gpt2_config.h"

namespace batchlab::models {

// "transformer": the decoder without the output layer.
class Gpt2ModelImpl : public torch::nn::Module {
 public:
  // Validates the config (InputError). The weights are initialized as GPT-2.
  explicit Gpt2ModelImpl(const Gpt2Config& config);

  // input_ids: int64 [B, T], T <= max_positions -> the final LayerNorm's output float [B, T, H].
  // Throws InputError when T exceeds model.max_seq_len.
  torch::Tensor forward(const torch::Tensor& input_ids);

  // Switches every block's attention kernel (tests compare the two).
  void set_attention_kernel(AttentionKernel kernel);

  torch::nn::Embedding wte{nullptr};
  torch::nn::Embedding wpe{nullptr};
  torch::nn::ModuleList h{nullptr};
  torch::nn::LayerNorm ln_f{nullptr};

 private:
  Gpt2Config config_;
};
TORCH_MODULE(Gpt2Model);

class Gpt2LMHeadModel : public CausalLanguageModel {
 public:
  // Validates the config (InputError) and initializes as GPT-2.
  explicit Gpt2LMHeadModel(const Gpt2Config& config);

  // See CausalLanguageModel::forward: logits float [B, T, vocab] = hidden x wte^T.
  torch::Tensor forward(const torch::Tensor& input_ids) override;

  int64_t vocab_size() const override { return config_.vocab_size; }
  int64_t max_seq_len() const override { return config_.max_positions; }
  const Gpt2Config& config() const { return config_; }

  Gpt2Model& transformer() { return transformer_; }
  // The output layer's weight, float [vocab, hidden]: the token embedding tensor itself.
  const torch::Tensor& lm_head_weight() const { return transformer_->wte->weight; }

 private:
  Gpt2Config config_;
  Gpt2Model transformer_{nullptr};
};

// Gpt2LMHeadModel for model.arch = gpt2_tiny .. gpt2_xl (models/gpt2_config.h), with the
// vocabulary of `vocab_size` when > 0 (the trained tokenizer's), else model.vocab_size. Throws
// InputError for another arch (listing the GPT-2 names) or unusable sizes.
std::shared_ptr<CausalLanguageModel> make_gpt2(const config::ModelConfig& model,
                                               int64_t vocab_size = 0);

}  // namespace batchlab::models
