// BERT's input embeddings ("embeddings" in Hugging Face's names): the sum of a token embedding
// (word_embeddings, vocab x hidden, which the MLM decoder reuses as its weight), a learned
// absolute position embedding (position_embeddings, max_seq_len x hidden) and a segment embedding
// (token_type_embeddings, 2 x hidden), then LayerNorm and dropout. The LayerNorm is kept in the
// pre-LN (Cramming) variant too: it is the only normalization the first layer's residual stream
// gets.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <string>

#include "models/bert_config.h"

namespace batchlab::models {

class BertEmbeddingsImpl : public torch::nn::Module {
 public:
  explicit BertEmbeddingsImpl(const BertConfig& config);

  // input_ids: int64 [B, T] with T <= max_seq_len; segment_ids: int64 [B, T] in
  // [0, type_vocab_size), or undefined for all 0. Returns float [B, T, hidden].
  // Throws InputError when T exceeds model.max_seq_len.
  torch::Tensor forward(const torch::Tensor& input_ids, const torch::Tensor& segment_ids);

  torch::nn::Embedding word_embeddings{nullptr};
  torch::nn::Embedding position_embeddings{nullptr};
  torch::nn::Embedding token_type_embeddings{nullptr};
  torch::nn::LayerNorm layer_norm{nullptr};  // registered as "LayerNorm"

 private:
  std::string name_;
  double dropout_;
};
TORCH_MODULE(BertEmbeddings);

}  // namespace batchlab::models
