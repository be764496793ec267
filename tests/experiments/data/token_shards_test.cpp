// Packed token shards: round trips in both token widths with document boundaries kept, several
// shards, and errors naming the file for truncated, corrupt or missing shards.
#include "experiments/data/token_shards.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/errors.h"
#include "tests/experiments/data/text_test_util.h"

namespace batchlab::data {
namespace {

using testing::ScratchDir;

void expect_round_trip(const std::string& dir, const std::vector<std::vector<int32_t>>& docs,
                       int64_t vocab) {
  const auto shards = TokenShards::open(dir);
  EXPECT_EQ(shards->vocab_size(), vocab);
  ASSERT_EQ(shards->num_documents(), static_cast<int64_t>(docs.size()));
  int64_t total = 0;
  for (size_t d = 0; d < docs.size(); ++d) {
    EXPECT_EQ(shards->document_starts()[d], total);
    EXPECT_EQ(shards->document_length(static_cast<int64_t>(d)),
              static_cast<int64_t>(docs[d].size()));
    EXPECT_EQ(shards->document(static_cast<int64_t>(d)), docs[d]) << "document " << d;
    total += static_cast<int64_t>(docs[d].size());
  }
  EXPECT_EQ(shards->num_tokens(), total);
}

TEST(TokenShards, Uint16RoundTripOverSeveralShardsKeepsDocumentBoundaries) {
  ScratchDir dir("shards16");
  auto docs = testing::random_documents(40, 1, 300, 8000, 3);
  docs[7].clear();  // an empty document is kept as a boundary
  testing::write_shards(dir / "out", docs, 8000, 2000);
  const auto shards = TokenShards::open(dir / "out");
  EXPECT_EQ(shards->token_bytes(), 2);
  EXPECT_GT(shards->shards().size(), 3u);
  // The file holds exactly header, offsets and 2-byte tokens.
  for (const auto& s : shards->shards()) {
    EXPECT_EQ(static_cast<int64_t>(std::filesystem::file_size(dir / ("out/" + s.file))),
              64 + 8 * (s.documents + 1) + 2 * s.tokens);
  }
  expect_round_trip(dir / "out", docs, 8000);
  // Partial copies inside a document.
  std::vector<int64_t> part(5);
  shards->copy_tokens(3, 2, 5, part.data());
  for (int i = 0; i < 5; ++i) EXPECT_EQ(part[i], docs[3][2 + i]);
}

TEST(TokenShards, Uint32WhenTheVocabularyExceeds16Bits) {
  ScratchDir dir("shards32");
  const int64_t vocab = 70000;
  auto docs = testing::random_documents(10, 50, 200, vocab, 5);
  docs[0][0] = 69999;  // needs more than 16 bits
  docs[1][0] = 65536;
  testing::write_shards(dir / "out", docs, vocab, 1 << 20);
  const auto shards = TokenShards::open(dir / "out");
  EXPECT_EQ(shards->token_bytes(), 4);
  expect_round_trip(dir / "out", docs, vocab);
  EXPECT_EQ(token_bytes_for_vocab(65536), 2);  // ids 0..65535 fit
  EXPECT_EQ(token_bytes_for_vocab(65537), 4);
}

TEST(TokenShards, TruncatedShardIsAnErrorNamingTheFile) {
  ScratchDir dir("trunc");
  testing::write_shards(dir / "out", testing::random_documents(30, 50, 100, 1000, 7), 1000, 1500);
  const auto victim = dir / "out/shard-00001.bin";
  std::filesystem::resize_file(victim, std::filesystem::file_size(victim) - 3);
  try {
    TokenShards::open(dir / "out");
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(victim), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
}

TEST(TokenShards, SkippingLeavesOutTheBadShardAndCountsIt) {
  ScratchDir dir("skip");
  const auto docs = testing::random_documents(30, 50, 100, 1000, 7);
  testing::write_shards(dir / "out", docs, 1000, 1500);
  const auto all = TokenShards::open(dir / "out");
  const auto bad = all->shards()[1];
  const auto victim = dir / ("out/" + bad.file);
  std::filesystem::resize_file(victim, std::filesystem::file_size(victim) / 2);

  const auto kept = TokenShards::open(dir / "out", /*skip_corrupt=*/true);
  ASSERT_EQ(kept->skipped().size(), 1u);
  EXPECT_NE(kept->skipped()[0].find(victim), std::string::npos) << kept->skipped()[0];
  EXPECT_EQ(kept->shards().size(), all->shards().size() - 1);
  EXPECT_EQ(kept->num_documents(), all->num_documents() - bad.documents);
  EXPECT_EQ(kept->num_tokens(), all->num_tokens() - bad.tokens);
  // The documents after the skipped shard follow the ones before it.
  const int64_t first_after = all->shards()[0].documents;
  EXPECT_EQ(kept->document(first_after), docs[first_after + bad.documents]);

  // Nothing usable left is still an error.
  for (const auto& s : all->shards()) std::filesystem::resize_file(dir / ("out/" + s.file), 10);
  EXPECT_THROW(TokenShards::open(dir / "out", true), DataError);
}

TEST(TokenShards, CorruptTokenIsACheckumErrorNamingTheFile) {
  ScratchDir dir("corrupt");
  testing::write_shards(dir / "out", testing::random_documents(10, 50, 100, 1000, 8), 1000,
                        1 << 20);
  const auto victim = dir / "out/shard-00000.bin";
  {
    std::fstream f(victim, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-10, std::ios::end);
    f.put('\x7f');
  }
  try {
    TokenShards::open(dir / "out");
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(victim), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << e.what();
  }
}

TEST(TokenShards, MissingIndexOrShardNamesThePath) {
  ScratchDir dir("missing");
  try {
    TokenShards::open(dir / "nothing");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(dir / "nothing"), std::string::npos) << e.what();
  }
  testing::write_shards(dir / "out", testing::random_documents(10, 50, 100, 1000, 9), 1000, 600);
  std::filesystem::remove(dir / "out/shard-00002.bin");
  try {
    TokenShards::open(dir / "out");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("shard-00002.bin"), std::string::npos) << e.what();
  }
}

TEST(TokenShards, WriterRejectsOutOfRangeIdsAndAnExistingIndex) {
  ScratchDir dir("writer");
  {
    TokenShardWriter w(dir / "out", 100, 1 << 20);
    EXPECT_THROW(w.add_document({5, 100}), InputError);
    EXPECT_THROW(w.add_document({-1}), InputError);
    w.add_document({5, 6, 7});
    w.finish();
  }
  // The rejected documents left nothing behind.
  EXPECT_EQ(TokenShards::open(dir / "out")->num_tokens(), 3);
  try {
    TokenShardWriter again(dir / "out", 100, 1 << 20);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(dir / "out"), std::string::npos) << e.what();
  }
}

TEST(TokenShards, UnfinishedWriterLeavesNoReadableCorpus) {
  ScratchDir dir("unfinished");
  {
    TokenShardWriter w(dir / "out", 100, 10);
    w.add_document({5, 6, 7, 8, 9, 10});  // flushed as a shard: no index yet
  }
  EXPECT_THROW(TokenShards::open(dir / "out"), DataError);
}

}  // namespace
}  // namespace batchlab::data
