// BERT masking with exact counts: the 80/10/10 split and the selection count checked exactly on
// a large sample, special tokens never selected, uniform selection, determinism.
#include "experiments/data/mlm_masking.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "experiments/data/tokenizer.h"

namespace batchlab::data {
namespace {

// n ids where every 20th is a special token (cycling through the five reserved ids).
std::vector<int64_t> sample_ids(int64_t n, int64_t vocab, uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    ids[i] = i % 20 == 0
                 ? (i / 20) % kFirstOrdinaryId
                 : kFirstOrdinaryId + static_cast<int64_t>(rng.below(vocab - kFirstOrdinaryId));
  }
  return ids;
}

TEST(MlmMasking, ExactEightyTenTenOnALargeSample) {
  const int64_t n = 1 << 20, vocab = 30000;
  const auto original = sample_ids(n, vocab, 1);
  auto ids = original;
  const auto r = apply_mlm_masking(ids.data(), n, 0.15, vocab, 42);

  const int64_t eligible = n - n / 20 - (n % 20 ? 1 : 0);
  ASSERT_EQ(r.counts.eligible, eligible);
  const int64_t selected = std::llround(0.15 * static_cast<double>(eligible));
  ASSERT_EQ(r.counts.selected, selected);
  ASSERT_EQ(static_cast<int64_t>(r.positions.size()), selected);
  const int64_t masked = std::llround(0.8 * static_cast<double>(selected));
  const int64_t randomized = std::llround(0.1 * static_cast<double>(selected));
  EXPECT_EQ(r.counts.masked, masked);
  EXPECT_EQ(r.counts.randomized, randomized);
  EXPECT_EQ(r.counts.kept, selected - masked - randomized);

  // Read the categories back from the corrupted ids, not from the counts.
  int64_t seen_mask = 0, seen_changed = 0, seen_same = 0;
  for (size_t k = 0; k < r.positions.size(); ++k) {
    const int64_t p = r.positions[k];
    ASSERT_EQ(r.labels[k], original[p]);
    if (k > 0) {
      ASSERT_LT(r.positions[k - 1], p) << "positions ascending and unique";
    }
    if (ids[p] == kMaskId) {
      ++seen_mask;
    } else if (ids[p] != original[p]) {
      ++seen_changed;
      EXPECT_GE(ids[p], kFirstOrdinaryId);
      EXPECT_LT(ids[p], vocab);
    } else {
      ++seen_same;
    }
  }
  EXPECT_EQ(seen_mask, masked);
  // A random replacement equals the original with probability 1/(vocab - 5): a handful at most.
  EXPECT_LE(seen_changed, randomized);
  EXPECT_GE(seen_changed, randomized - 10);
  EXPECT_EQ(seen_changed + seen_same, selected - masked);
  // Nothing outside the selection changed.
  int64_t changed_outside = 0;
  for (int64_t i = 0; i < n; ++i) changed_outside += ids[i] != original[i];
  EXPECT_EQ(changed_outside, seen_mask + seen_changed);
  EXPECT_NEAR(static_cast<double>(seen_mask) / static_cast<double>(selected), 0.8, 1e-5);
}

TEST(MlmMasking, SpecialTokensAreNeverSelected) {
  const int64_t n = 4096;
  auto ids = sample_ids(n, 500, 2);
  for (int64_t i = 0; i < n; i += 3) ids[i] = i % kFirstOrdinaryId;  // a third special
  const auto original = ids;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    auto work = original;
    const auto r = apply_mlm_masking(work.data(), n, 0.5, 500, seed);
    for (int64_t p : r.positions) ASSERT_GE(original[p], kFirstOrdinaryId);
    for (int64_t i = 0; i < n; ++i) {
      if (original[i] < kFirstOrdinaryId) {
        ASSERT_EQ(work[i], original[i]);
      }
    }
  }
}

TEST(MlmMasking, SelectionIsUniformOverEligiblePositions) {
  // 3000 draws over 100 eligible tokens: each is selected 450 times on average (sd ~ 19.6).
  const int64_t n = 100;
  std::vector<int64_t> hits(n, 0), masked(n, 0);
  for (uint64_t seed = 0; seed < 3000; ++seed) {
    std::vector<int64_t> ids(n, 7);
    const auto r = apply_mlm_masking(ids.data(), n, 0.15, 100, seed);
    ASSERT_EQ(r.positions.size(), 15u);
    for (int64_t p : r.positions) ++hits[p];
    for (int64_t i = 0; i < n; ++i) masked[i] += ids[i] == kMaskId;
  }
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_NEAR(hits[i], 450, 100) << "position " << i;
    EXPECT_NEAR(static_cast<double>(masked[i]) / hits[i], 0.8, 0.12) << "position " << i;
  }
}

TEST(MlmMasking, SameSeedSameResultOtherSeedOtherSelection) {
  const auto original = sample_ids(5000, 1000, 3);
  auto a = original, b = original, c = original;
  const auto ra = apply_mlm_masking(a.data(), 5000, 0.15, 1000, 7);
  const auto rb = apply_mlm_masking(b.data(), 5000, 0.15, 1000, 7);
  const auto rc = apply_mlm_masking(c.data(), 5000, 0.15, 1000, 8);
  EXPECT_EQ(a, b);
  EXPECT_EQ(ra.positions, rb.positions);
  EXPECT_NE(ra.positions, rc.positions);
}

TEST(MlmMasking, CountsRoundEachStage) {
  const auto c = masking_counts(126, 0.15);  // one sequence of 128: 18.9 -> 19
  EXPECT_EQ(c.selected, 19);
  EXPECT_EQ(c.masked, 15);     // 15.2
  EXPECT_EQ(c.randomized, 2);  // 1.9
  EXPECT_EQ(c.kept, 2);
  const auto none = masking_counts(3, 0.15);
  EXPECT_EQ(none.selected, 0);
  EXPECT_EQ(none.kept, 0);
}

}  // namespace
}  // namespace batchlab::data
