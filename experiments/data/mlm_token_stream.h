// The packed corpus seen as one token stream for MLM sequences: every document's tokens followed
// by [SEP], documents in shard order. Sequences are windows of this stream, so they run across
// document boundaries with the [SEP] between documents kept (RoBERTa's "full sentences" packing):
// no token is wasted on padding and every window is full.
//
// A split is a contiguous range of the stream. The held-out (test) split is the tail of the
// corpus: it starts at the first document that begins at or after 1 - held_out_fraction of the
// stream, or exactly at that position when no document starts there (a corpus of one long
// document) or when that document starts so late that less than half the intended part remains. It
// depends only on the corpus, never on a seed, so every run of every sweep evaluates on the same
// text.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "experiments/data/token_shards.h"

namespace batchlab::data {

// Fraction of the stream held out for evaluation.
inline constexpr double kHeldOutFraction = 0.02;

class TokenStream {
 public:
  TokenStream() = default;
  // Positions [begin, end) of the whole stream (see total_stream_length).
  TokenStream(std::shared_ptr<const TokenShards> shards, int64_t begin, int64_t end);

  // Tokens plus one [SEP] per document.
  static int64_t total_stream_length(const TokenShards& shards);

  int64_t size() const { return end_ - begin_; }
  int64_t begin() const { return begin_; }
  const TokenShards& shards() const { return *shards_; }

  // Writes stream tokens [pos, pos + n) (relative to this split; inside it) to `out`.
  void copy(int64_t pos, int64_t n, int64_t* out) const;

 private:
  std::shared_ptr<const TokenShards> shards_;
  std::vector<int64_t> doc_stream_start_;  // [D + 1]: stream position of each document's start
  int64_t begin_ = 0;
  int64_t end_ = 0;
};

struct StreamSplits {
  TokenStream train;
  TokenStream test;
};

// Train = stream[0, b), test = stream[b, end) with b as described above.
StreamSplits split_stream(const std::shared_ptr<const TokenShards>& shards,
                          double held_out_fraction = kHeldOutFraction);

}  // namespace batchlab::data
