// MLM batches: the token stream with [SEP] between documents, the held-out split, sequences as
// consecutive windows with [CLS]/[SEP], exact masking per batch, sentence pairs with NSP labels,
// determinism across thread counts, the second-phase length and the two-phase schedule.
#include "experiments/data/mlm_batch.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/errors.h"
#include "experiments/data/tokenizer.h"
#include "tests/experiments/data/text_test_util.h"

namespace batchlab::data {
namespace {

using testing::ScratchDir;

constexpr int64_t kVocab = 3000;

class MlmBatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Documents shorter than the 2% held-out tail, so the split falls on a document start.
    docs_ = testing::random_documents(200, 20, 120, kVocab, 11);
    testing::write_shards(dir_ / "shards", docs_, kVocab, 4000);
    shards_ = TokenShards::open(dir_ / "shards");
    for (const auto& d : docs_) {
      stream_.insert(stream_.end(), d.begin(), d.end());
      stream_.push_back(kSepId);
    }
  }

  MlmBatchBuilder builder(bool pairs, int64_t threads = 1, int64_t seq_len = 64) const {
    MlmBatchOptions o;
    o.seq_len = seq_len;
    o.sentence_pair = pairs;
    o.vocab_size = kVocab;
    o.threads = threads;
    return MlmBatchBuilder(split_stream(shards_).train, o);
  }

  // Undoes the masking: the original ids of the batch, int64 [B, T].
  static torch::Tensor unmasked(const MlmBatch& b) {
    auto ids = b.input_ids.clone();
    ids.view({-1}).index_put_({b.masked_positions}, b.labels);
    return ids;
  }

  ScratchDir dir_{"mlmbatch"};
  std::vector<std::vector<int32_t>> docs_;
  std::vector<int64_t> stream_;  // the expected stream: documents joined by [SEP]
  std::shared_ptr<const TokenShards> shards_;
};

TEST_F(MlmBatchTest, StreamJoinsDocumentsWithSepAndHoldsOutTrailingDocuments) {
  const auto splits = split_stream(shards_);
  const int64_t total = static_cast<int64_t>(stream_.size());
  EXPECT_EQ(TokenStream::total_stream_length(*shards_), total);
  EXPECT_EQ(splits.train.size() + splits.test.size(), total);
  // The boundary is a document start at or after 98% of the stream.
  const int64_t b = splits.test.begin();
  EXPECT_GE(b, static_cast<int64_t>(0.98 * static_cast<double>(total)));
  EXPECT_EQ(stream_[b - 1], kSepId);
  std::vector<int64_t> all(total);
  splits.train.copy(0, splits.train.size(), all.data());
  splits.test.copy(0, splits.test.size(), all.data() + b);
  EXPECT_EQ(all, stream_);
  // A copy starting inside a document and crossing two boundaries.
  std::vector<int64_t> part(900);
  splits.train.copy(100, 900, part.data());
  EXPECT_TRUE(std::equal(part.begin(), part.end(), stream_.begin() + 100));
}

TEST(MlmSplit, OneLongDocumentIsSplitInside) {
  ScratchDir dir("onedoc");
  testing::write_shards(dir / "s", testing::random_documents(1, 5000, 5000, kVocab, 2), kVocab,
                        1 << 20);
  const auto splits = split_stream(TokenShards::open(dir / "s"));
  EXPECT_EQ(splits.train.size(), static_cast<int64_t>(0.98 * 5001));
  EXPECT_EQ(splits.train.size() + splits.test.size(), 5001);
}

TEST_F(MlmBatchTest, SequencesAreConsecutiveWindowsBetweenClsAndSep) {
  const auto mb = builder(false);
  const int64_t c = 62;
  EXPECT_EQ(mb.size(), split_stream(shards_).train.size() / c);
  const std::vector<int64_t> rows = {0, 1, 17, mb.size() - 1};
  const auto b = mb.build(rows.data(), 4, 64, 5);
  EXPECT_FALSE(b.segment_ids.defined());
  EXPECT_FALSE(b.nsp_labels.defined());
  const auto ids = unmasked(b);
  for (int64_t r = 0; r < 4; ++r) {
    EXPECT_EQ(ids[r][0].item<int64_t>(), kClsId);
    EXPECT_EQ(ids[r][63].item<int64_t>(), kSepId);
    for (int64_t t = 0; t < c; ++t) {
      ASSERT_EQ(ids[r][t + 1].item<int64_t>(), stream_[rows[r] * c + t]) << "row " << r;
    }
  }
}

TEST_F(MlmBatchTest, MaskingCountsAreExactPerBatchAndSkipSpecialTokens) {
  const auto mb = builder(false);
  std::vector<int64_t> rows(mb.size());
  for (int64_t i = 0; i < mb.size(); ++i) rows[i] = i;
  const auto b = mb.build(rows.data(), mb.size(), 64, 9);
  const auto ids = unmasked(b);
  const int64_t eligible = ids.ge(kFirstOrdinaryId).sum().item<int64_t>();
  const auto expected = masking_counts(eligible, 0.15);
  EXPECT_EQ(b.counts.selected, expected.selected);
  EXPECT_EQ(b.masked_positions.size(0), expected.selected);
  EXPECT_EQ(b.input_ids.eq(kMaskId).sum().item<int64_t>(), expected.masked);
  // No [CLS]/[SEP] (including the separators inside windows) is ever a target.
  EXPECT_TRUE(b.labels.ge(kFirstOrdinaryId).all().item<bool>());
  EXPECT_EQ(ids.view({-1}).index_select(0, b.masked_positions).equal(b.labels), true);
}

TEST_F(MlmBatchTest, SameBatchWithOneOrFourThreads) {
  for (bool pairs : {false, true}) {
    const auto one = builder(pairs, 1);
    const auto four = builder(pairs, 4);
    const std::vector<int64_t> rows = {5, 3, 99, 0, 42, 7, 7, 64, 1, 30, 2};
    const auto a = one.build(rows.data(), 11, 64, 1234);
    const auto b = four.build(rows.data(), 11, 64, 1234);
    EXPECT_TRUE(a.input_ids.equal(b.input_ids));
    EXPECT_TRUE(a.masked_positions.equal(b.masked_positions));
    EXPECT_TRUE(a.labels.equal(b.labels));
    if (pairs) {
      EXPECT_TRUE(a.segment_ids.equal(b.segment_ids));
      EXPECT_TRUE(a.nsp_labels.equal(b.nsp_labels));
    }
    const auto c = four.build(rows.data(), 11, 64, 1235);
    EXPECT_FALSE(a.input_ids.equal(c.input_ids)) << "another seed, other masks";
  }
}

TEST_F(MlmBatchTest, SentencePairsHaveSegmentsAndHalfRandomNextSegments) {
  const auto mb = builder(true);
  const int64_t c = 61;  // 64 - [CLS] - 2 x [SEP]
  EXPECT_EQ(mb.size(), split_stream(shards_).train.size() / c);
  std::vector<int64_t> rows(mb.size());
  for (int64_t i = 0; i < mb.size(); ++i) rows[i] = i;
  const auto b = mb.build(rows.data(), mb.size(), 64, 77);
  const auto ids = unmasked(b);
  int64_t random = 0;
  for (int64_t r = 0; r < mb.size(); ++r) {
    auto seg = b.segment_ids[r];
    const int64_t a_len = seg.eq(0).sum().item<int64_t>() - 2;  // [CLS] A [SEP]
    ASSERT_GE(a_len, c / 4);
    ASSERT_LE(a_len, 3 * c / 4);
    // Segment 0 then 1, no interleaving.
    ASSERT_TRUE(seg.slice(0, 0, a_len + 2).eq(0).all().item<bool>());
    ASSERT_TRUE(seg.slice(0, a_len + 2).eq(1).all().item<bool>());
    ASSERT_EQ(ids[r][0].item<int64_t>(), kClsId);
    ASSERT_EQ(ids[r][a_len + 1].item<int64_t>(), kSepId);
    ASSERT_EQ(ids[r][63].item<int64_t>(), kSepId);
    const int64_t start = rows[r] * c;
    for (int64_t t = 0; t < a_len; ++t)
      ASSERT_EQ(ids[r][1 + t].item<int64_t>(), stream_[start + t]);
    bool continues = true;
    for (int64_t t = 0; t < c - a_len; ++t) {
      continues = continues && ids[r][a_len + 2 + t].item<int64_t>() == stream_[start + a_len + t];
    }
    const int64_t label = b.nsp_labels[r].item<int64_t>();
    EXPECT_EQ(continues, label == 0) << "row " << r;
    random += label;
  }
  const double fraction = static_cast<double>(random) / static_cast<double>(mb.size());
  EXPECT_GT(fraction, 0.38);
  EXPECT_LT(fraction, 0.62);
}

TEST_F(MlmBatchTest, LongerPhaseTwoSequencesKeepTheExampleStarts) {
  const auto mb = builder(false);
  const int64_t c1 = 62, c2 = 254;
  const std::vector<int64_t> rows = {0, 10, mb.size() - 1};
  const auto b = mb.build(rows.data(), 3, 256, 3);
  ASSERT_EQ(b.input_ids.size(1), 256);
  const auto ids = unmasked(b);
  const int64_t size = split_stream(shards_).train.size();
  for (int64_t r = 0; r < 3; ++r) {
    const int64_t start = std::min(rows[r] * c1, size - c2);  // the last one moves back
    for (int64_t t = 0; t < c2; ++t) ASSERT_EQ(ids[r][t + 1].item<int64_t>(), stream_[start + t]);
  }
  EXPECT_THROW(mb.check_length(1 << 20), InputError);  // longer than the split: bad input
  // Shorter than the base length: the schema's rule (data.seq_len_phase2), asserted here.
  try {
    mb.check_length(32);
    ADD_FAILURE() << "expected an internal error";
  } catch (const InputError& e) {
    ADD_FAILURE() << "reported as bad input: " << e.what();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("internal error"), std::string::npos) << e.what();
  }
}

TEST_F(MlmBatchTest, TooLittleTextIsAnInputError) {
  MlmBatchOptions o;
  o.seq_len = 1 << 20;
  o.vocab_size = kVocab;
  EXPECT_THROW(MlmBatchBuilder(split_stream(shards_).test, o), InputError);
  // Too short for [CLS]/[SEP]: the schema's data.seq_len rule, asserted here (not bad input).
  o.seq_len = 2;
  try {
    MlmBatchBuilder(split_stream(shards_).test, o);
    ADD_FAILURE() << "expected an internal error";
  } catch (const InputError& e) {
    ADD_FAILURE() << "reported as bad input: " << e.what();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("internal error"), std::string::npos) << e.what();
  }
}

TEST(MlmSchedule, SwitchesToThePhaseTwoLengthForTheLastFraction) {
  config::DataConfig d;
  d.seq_len = 128;
  d.seq_len_phase2 = 512;
  d.phase2_fraction = 0.1;
  EXPECT_EQ(scheduled_seq_len(d, 0.0), 128);
  EXPECT_EQ(scheduled_seq_len(d, 0.899), 128);
  EXPECT_EQ(scheduled_seq_len(d, 900.0 / 1000.0), 512);  // step 900 of 1000
  EXPECT_EQ(scheduled_seq_len(d, 899.0 / 1000.0), 128);
  EXPECT_EQ(scheduled_seq_len(d, 1.0), 512);
  d.phase2_fraction = 0.25;
  EXPECT_EQ(scheduled_seq_len(d, 0.74), 128);
  EXPECT_EQ(scheduled_seq_len(d, 0.75), 512);
  d.seq_len_phase2 = 0;  // off
  EXPECT_EQ(scheduled_seq_len(d, 0.99), 128);
}

}  // namespace
}  // namespace batchlab::data
