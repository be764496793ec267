// MLM batches: sequences packed from a TokenStream split, masked with exact counts.
//
// Example i of a split is the window of C = seq_len - 2 stream tokens starting at i x C (the
// incomplete tail is not an example), laid out as [CLS] window [SEP]. In sentence-pair mode
// C = seq_len - 3 and the window is cut at a point drawn in [C/4, 3C/4] into segments A and B,
// laid out as [CLS] A [SEP] B [SEP] with segment ids 0 up to the first [SEP] and 1 after it; for
// half of the rows (a coin per row) B is replaced by a segment of the same length from elsewhere
// in the split that does not overlap the window (next-sentence label 1 = random, 0 = continuation).
//
// A batch of examples at a longer length (BERT's second phase) keeps the example numbering of the
// base length: example i starts at the same stream position i x C, moved back when the longer
// window would run past the end of the split. Every window is full, so batches never need padding.
//
// Randomness: row r of a batch draws from mix(seed, r) (cut point, coin, random segment) and the
// masking of the whole batch from a stream of its own, mix(seed, 2^64 - 1): nothing depends on how
// many threads build the rows.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "core/config/data_config.h"
#include "experiments/data/mlm_masking.h"
#include "experiments/data/mlm_token_stream.h"

namespace batchlab::data {

struct MlmBatch {
  torch::Tensor input_ids;         // int64 [B, T], corrupted by the masking
  torch::Tensor segment_ids;       // int64 [B, T] 0/1; undefined unless sentence pairs
  torch::Tensor masked_positions;  // int64 [N]: flat indices into the B*T tokens, ascending
  torch::Tensor labels;            // int64 [N]: the original ids at those positions
  torch::Tensor nsp_labels;        // int64 [B]: 1 = B is a random segment; undefined unless pairs
  MaskingCounts counts;
};

struct MlmBatchOptions {
  int64_t seq_len = 128;  // the base length: defines the examples
  double mask_prob = 0.15;
  bool sentence_pair = false;
  int64_t vocab_size = 0;  // random replacement tokens are drawn below it
  int64_t threads = 1;     // rows built in parallel; results do not depend on it
  int64_t limit = 0;       // keep the first `limit` examples (0 = all)
};

class MlmBatchBuilder {
 public:
  // Throws InputError when the split holds no complete example, or seq_len leaves no room for
  // tokens (naming data.seq_len).
  MlmBatchBuilder(TokenStream stream, MlmBatchOptions options);

  int64_t size() const { return examples_; }
  const MlmBatchOptions& options() const { return options_; }

  // Tokens of a sequence's content at `seq_len` (2 or 3 fewer than it for the special tokens).
  int64_t content_length(int64_t seq_len) const;
  // Throws InputError naming data.seq_len_phase2 unless the split has room for a window of that
  // length.
  void check_length(int64_t seq_len) const;

  // The examples at `indices` (each in [0, size())) at `seq_len` (>= the base length), masked.
  MlmBatch build(const int64_t* indices, int64_t count, int64_t seq_len, uint64_t seed) const;

 private:
  // Fills row `r`'s ids [T] and segments [T] (may be null) and returns its NSP label.
  int64_t fill_row(int64_t index, int64_t row, int64_t seq_len, uint64_t seed, int64_t* ids,
                   int64_t* segments) const;

  TokenStream stream_;
  MlmBatchOptions options_;
  int64_t base_content_ = 0;
  int64_t examples_ = 0;
};

// The sequence length of BERT's two-phase schedule at training progress p in [0, 1]: data.seq_len
// while p < 1 - data.phase2_fraction, then data.seq_len_phase2 (when that is > 0).
int64_t scheduled_seq_len(const config::DataConfig& data, double progress);

}  // namespace batchlab::data
