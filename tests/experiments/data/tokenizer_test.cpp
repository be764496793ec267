// The SentencePiece wrapper: training with a chosen vocabulary size, the fixed ids of the special
// tokens, encode/decode round trips, determinism and clear errors.
#include "experiments/data/tokenizer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/errors.h"
#include "experiments/data/sentencepiece_backend.h"
#include "tests/experiments/data/text_test_util.h"

namespace batchlab::data {
namespace {

using testing::ScratchDir;

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

class TokenizerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ScratchDir("tokenizer");
    files_ = testing::write_text_corpus(dir_->path / "corpus", 20, 60);
    TokenizerTrainOptions o;
    o.vocab_size = 400;
    train_tokenizer(files_, *dir_ / "tok", o);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static ScratchDir* dir_;
  static std::vector<std::string> files_;
};
ScratchDir* TokenizerTest::dir_ = nullptr;
std::vector<std::string> TokenizerTest::files_;

TEST_F(TokenizerTest, TrainsTheRequestedVocabularyWithFixedSpecialIds) {
  const auto tok = Tokenizer::load(*dir_ / "tok.model");
  EXPECT_EQ(tok.vocab_size(), 400);
  EXPECT_EQ(tok.piece(kPadId), "[PAD]");
  EXPECT_EQ(tok.piece(kUnkId), "[UNK]");
  EXPECT_EQ(tok.piece(kClsId), "[CLS]");
  EXPECT_EQ(tok.piece(kSepId), "[SEP]");
  EXPECT_EQ(tok.piece(kMaskId), "[MASK]");
  EXPECT_TRUE(std::filesystem::exists(*dir_ / "tok.vocab"));
}

TEST_F(TokenizerTest, EncodeDecodeRoundTripUsesOrdinaryIdsOnly) {
  const auto tok = Tokenizer::load(*dir_ / "tok.model");
  SplitMix64 rng(99);
  for (int i = 0; i < 20; ++i) {
    const std::string line = testing::pseudo_line(rng);
    const auto ids = tok.encode(line);
    ASSERT_FALSE(ids.empty());
    for (int32_t id : ids) {
      EXPECT_GE(id, kFirstOrdinaryId) << line;
      EXPECT_LT(id, tok.vocab_size());
    }
    EXPECT_EQ(tok.decode(ids), line);
  }
  // Characters never seen in training fall back to bytes, not [UNK], and still round trip.
  const std::string rare = "zebra \xc3\xa9t\xc3\xa9 {}";
  const auto ids = tok.encode(rare);
  for (int32_t id : ids) EXPECT_NE(id, kUnkId);
  EXPECT_EQ(tok.decode(ids), rare);
}

TEST_F(TokenizerTest, SpecialTokenTextNeverBecomesASpecialId) {
  const auto tok = Tokenizer::load(*dir_ / "tok.model");
  for (int32_t id : tok.encode("[MASK] kalo [CLS] mi [SEP] [PAD] [UNK]")) {
    EXPECT_GE(id, kFirstOrdinaryId) << tok.piece(id);
  }
}

TEST_F(TokenizerTest, SameCorpusAndOptionsGiveTheSameModel) {
  TokenizerTrainOptions o;
  o.vocab_size = 400;
  train_tokenizer(files_, *dir_ / "again", o);
  // The .model embeds the output path; the pieces and their scores are in the .vocab.
  const auto a = read_bytes(*dir_ / "again.vocab");
  EXPECT_TRUE(a == read_bytes(*dir_ / "tok.vocab")) << "same corpus, different pieces";
  EXPECT_GT(a.size(), 1000u);
}

TEST_F(TokenizerTest, VocabularyTooLargeForTheCorpusIsAnInputError) {
  TokenizerTrainOptions o;
  o.vocab_size = 50000;
  try {
    train_tokenizer({files_.front()}, *dir_ / "huge", o);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("Vocabulary size"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(files_.front()), std::string::npos) << e.what();
  }
}

TEST_F(TokenizerTest, BadInputsNameTheFile) {
  TokenizerTrainOptions o;
  o.vocab_size = 400;
  const auto missing = *dir_ / "nope.txt";
  try {
    train_tokenizer({missing}, *dir_ / "x", o);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  o.vocab_size = 3;
  EXPECT_THROW(train_tokenizer(files_, *dir_ / "x", o), InputError);

  try {
    Tokenizer::load(missing);
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  try {
    Tokenizer::load(files_.front());  // a text file, not a model
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(files_.front()), std::string::npos) << e.what();
  }
}

TEST_F(TokenizerTest, ModelWithOtherSpecialIdsIsRejected) {
  // SentencePiece's defaults: <unk> 0, <s> 1, </s> 2 and no [CLS]/[SEP]/[MASK].
  const auto prefix = *dir_ / "foreign";
  const auto error = make_sentencepiece_backend()->train(
      {{"model_prefix", prefix}, {"vocab_size", "100"}, {"minloglevel", "2"}}, {files_.front()}, 0);
  ASSERT_EQ(error, "");
  try {
    Tokenizer::load(prefix + ".model");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("foreign.model"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[PAD]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace batchlab::data
