// Causal-LM examples: windows of a TokenStream split (mlm_token_stream.h: every document's tokens
// followed by [SEP], documents in shard order), each a sequence of T = seq_len input tokens and
// the T tokens that follow each of them.
//
// Example i is the T + 1 stream tokens starting at i x T: inputs = tokens [iT, iT + T), targets =
// tokens [iT + 1, iT + T + 1). Consecutive examples share one token (the last target of one is the
// first input of the next), so every token of the split but the first is a target exactly once,
// and the incomplete tail is not an example. Windows run across document boundaries with the
// [SEP] kept, as GPT-2's training data runs documents together with <|endoftext|> between them:
// the model learns to predict the end of a document and, after [SEP], the start of another.
//
// Nothing is random: an example is the same window in every run, at every batch size.
#pragma once

#include <torch/types.h>

#include <cstdint>

#include "experiments/data/mlm_token_stream.h"

namespace batchlab::data {

struct CausalLmBatch {
  torch::Tensor inputs;   // int64 [B, T]
  torch::Tensor targets;  // int64 [B, T]: targets[b, t] = the token after inputs[b, t]
};

class CausalLmWindows {
 public:
  // Examples of `seq_len` tokens of `stream`, the first `limit` of them (0 = all). Throws
  // InputError naming data.seq_len when the split holds no complete example, and naming `key`
  // (data.train_size, data.test_size) when `limit` is larger than what it holds.
  CausalLmWindows(TokenStream stream, int64_t seq_len, int64_t limit, const char* key);

  int64_t size() const { return examples_; }
  int64_t seq_len() const { return seq_len_; }

  // The examples at `indices` (each in [0, size())); throws Error for one outside.
  CausalLmBatch build(const int64_t* indices, int64_t count) const;

 private:
  TokenStream stream_;
  int64_t seq_len_ = 0;
  int64_t examples_ = 0;
};

}  // namespace batchlab::data
