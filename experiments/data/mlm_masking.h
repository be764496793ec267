// BERT's masked-language-model corruption with exact counts.
//
// Of the E eligible tokens of a batch (every id >= kFirstOrdinaryId: [PAD], [UNK], [CLS], [SEP]
// and [MASK] are never selected), exactly round(mask_prob x E) are selected, as a uniformly random
// subset in uniformly random order (a partial Fisher-Yates shuffle of the eligible positions).
// The first round(0.8 x S) selected become [MASK], the next round(0.1 x S) a uniformly random
// ordinary token (which may equal the original, as in BERT), the rest stay unchanged. Exact counts
// per batch, rather than independent coin flips per token, make every batch carry the same
// amount of signal and let tests check the proportions exactly.
#pragma once

#include <cstdint>
#include <vector>

namespace batchlab::data {

// SplitMix64 (Steele, Lea and Flood 2014): a tiny, fast generator with a 64-bit state, enough for
// sampling positions; seeded per batch and per row so results never depend on threads.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) by multiply-shift (Lemire); the bias is below n / 2^64.
  uint64_t below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }

 private:
  uint64_t state_;
};

struct MaskingCounts {
  int64_t eligible = 0;
  int64_t selected = 0;
  int64_t masked = 0;      // replaced by [MASK]
  int64_t randomized = 0;  // replaced by a random ordinary token
  int64_t kept = 0;        // selected but left unchanged
};

struct MaskingResult {
  std::vector<int64_t> positions;  // selected flat positions, ascending
  std::vector<int64_t> labels;     // the original ids there
  MaskingCounts counts;
};

// Selected counts for E eligible tokens: {selected, masked, randomized, kept}.
MaskingCounts masking_counts(int64_t eligible, double mask_prob);

// Corrupts `ids` (n flat token ids, e.g. a [B, T] batch) in place as described above, drawing
// from `seed`. `vocab_size` bounds the random replacement tokens: [kFirstOrdinaryId, vocab_size).
MaskingResult apply_mlm_masking(int64_t* ids, int64_t n, double mask_prob, int64_t vocab_size,
                                uint64_t seed);

}  // namespace batchlab::data
