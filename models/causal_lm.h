// The interface every causal (left-to-right) language model implements (the GPT-2 family,
// models/gpt2.h), so the causal-LM task (experiments/tasks/causal_lm_task.h) and the trainer hold
// any of them behind one type.
#pragma once

#include <torch/nn/module.h>
#include <torch/types.h>

#include <cstdint>

namespace batchlab::models {

class CausalLanguageModel : public torch::nn::Module {
 public:
  // input_ids: int64 [B, T] token ids with T <= max_seq_len(). Returns the next-token logits
  // float [B, T, vocab]: position t's logits are a function of tokens 0..t only (a later token
  // cannot change them), so one forward pass scores every position of a sequence.
  virtual torch::Tensor forward(const torch::Tensor& input_ids) = 0;

  virtual int64_t vocab_size() const = 0;
  virtual int64_t max_seq_len() const = 0;
};

}  // namespace batchlab::models
