// The interface every masked-language-model network implements (the BERT family, models/bert.h),
// so the MLM task (experiments/tasks) and the trainer hold any of them behind one type.
#pragma once

#include <torch/nn/module.h>
#include <torch/types.h>

#include <cstdint>

namespace batchlab::models {

struct MlmOutput {
  // float [N, vocab]: logits at the N selected positions only. The decoder (hidden x vocab per
  // token) dominates a small BERT's cost, so unselected tokens never pay for it.
  torch::Tensor mlm_logits;
  // float [B, 2]: next-sentence logits from the pooled first token; undefined without that head.
  torch::Tensor nsp_logits;
};

class MaskedLanguageModel : public torch::nn::Module {
 public:
  // input_ids: int64 [B, T] token ids; segment_ids: int64 [B, T] sentence A/B (0/1), or undefined
  // for all 0; padding_mask: bool [B, T], true at padding, or undefined for none; masked_positions:
  // int64 [N], flat indices into the B*T tokens where the MLM head is evaluated.
  virtual MlmOutput forward(const torch::Tensor& input_ids, const torch::Tensor& segment_ids,
                            const torch::Tensor& padding_mask,
                            const torch::Tensor& masked_positions) = 0;

  virtual int64_t vocab_size() const = 0;
  virtual int64_t max_seq_len() const = 0;
};

}  // namespace batchlab::models
