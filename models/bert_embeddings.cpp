#include "models/bert_embeddings.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/errors.h"

namespace batchlab::models {

BertEmbeddingsImpl::BertEmbeddingsImpl(const BertConfig& config)
    : name_(config.name), dropout_(config.dropout) {
  word_embeddings =
      register_module("word_embeddings", torch::nn::Embedding(config.vocab_size, config.hidden));
  position_embeddings = register_module("position_embeddings",
                                        torch::nn::Embedding(config.max_seq_len, config.hidden));
  token_type_embeddings = register_module(
      "token_type_embeddings", torch::nn::Embedding(config.type_vocab_size, config.hidden));
  layer_norm = register_module(
      "LayerNorm", torch::nn::LayerNorm(
                       torch::nn::LayerNormOptions({config.hidden}).eps(config.layer_norm_eps)));
}

torch::Tensor BertEmbeddingsImpl::forward(const torch::Tensor& input_ids,
                                          const torch::Tensor& segment_ids) {
  if (input_ids.dim() != 2 || input_ids.scalar_type() != torch::kInt64) {
    throw Error(fmt::format("{}: input_ids must be int64 [B, T], got {} [{}]", name_,
                            c10::toString(input_ids.scalar_type()),
                            fmt::join(input_ids.sizes(), ", ")));
  }
  const int64_t T = input_ids.size(1);
  const int64_t max_len = position_embeddings->weight.size(0);
  if (T > max_len) {
    throw InputError(fmt::format(
        "{}: sequences of {} tokens exceed model.max_seq_len = {} (the position embedding's "
        "rows): raise model.max_seq_len or shorten data.seq_len",
        name_, T, max_len));
  }
  if (segment_ids.defined() && segment_ids.sizes() != input_ids.sizes()) {
    throw Error(fmt::format("{}: segment_ids [{}] must have input_ids' shape [{}]", name_,
                            fmt::join(segment_ids.sizes(), ", "),
                            fmt::join(input_ids.sizes(), ", ")));
  }
  torch::Tensor x = word_embeddings->forward(input_ids);  // [B, T, H]
  // Positions 0..T-1: the first T rows, broadcast over the batch ([T, H]).
  x = x + position_embeddings->weight.narrow(0, 0, T);
  // No segments given: every token is sentence A, row 0 ([H], broadcast).
  x = segment_ids.defined() ? x + token_type_embeddings->forward(segment_ids)
                            : x + token_type_embeddings->weight[0];
  return torch::dropout(layer_norm->forward(x), dropout_, is_training());  // [B, T, H]
}

}  // namespace batchlab::models
