// Raw text to shards: finding the files, pack_text's documents, and data.path resolution for
// dataset "text" (a pack-text directory, or raw text tokenized once into the cache).
#include "experiments/data/text_corpus.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>

#include "core/errors.h"
#include "tests/experiments/data/text_test_util.h"

namespace batchlab::data {
namespace {

using testing::ScratchDir;

class TextCorpusTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ScratchDir("textcorpus");
    files_ = testing::write_text_corpus(dir_->path / "corpus", 12, 40);
    TokenizerTrainOptions o;
    o.vocab_size = 350;
    train_tokenizer(files_, *dir_ / "tok", o);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static ScratchDir* dir_;
  static std::vector<std::string> files_;
};
ScratchDir* TextCorpusTest::dir_ = nullptr;
std::vector<std::string> TextCorpusTest::files_;

TEST_F(TextCorpusTest, ListsTextFilesSortedAndNamesMissingPaths) {
  ScratchDir d("listing");
  std::filesystem::create_directories(d.path / "sub");
  for (const char* name : {"b.txt", "a.rst", "sub/c.md", "sub/x.rst.txt", "skip.bin", "notes"}) {
    std::ofstream(d / name) << "text\n";
  }
  const auto found = list_text_files({d.path.string()});
  const std::vector<std::string> expected = {d / "a.rst", d / "b.txt", d / "sub/c.md",
                                             d / "sub/x.rst.txt"};
  EXPECT_EQ(found, expected);
  // An explicit file is taken whatever its name; duplicates collapse.
  EXPECT_EQ(list_text_files({d / "notes", d / "notes"}), std::vector<std::string>{d / "notes"});
  try {
    list_text_files({d / "missing"});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(d / "missing"), std::string::npos) << e.what();
  }
  std::filesystem::create_directories(d.path / "empty");
  EXPECT_THROW(list_text_files({d / "empty"}), InputError);
}

TEST_F(TextCorpusTest, PackTextWritesOneDocumentPerFileAndCopiesTheTokenizer) {
  const auto tok = Tokenizer::load(*dir_ / "tok.model");
  auto inputs = files_;
  std::ofstream(*dir_ / "blank.txt") << "\n   \n";
  inputs.insert(inputs.begin() + 3, *dir_ / "blank.txt");
  PackTextOptions o;
  o.shard_bytes = 2048;
  o.threads = 3;
  const auto summary = pack_text(inputs, tok, *dir_ / "packed", o);
  EXPECT_EQ(summary.files, 13);
  EXPECT_EQ(summary.documents, 12);
  EXPECT_EQ(summary.empty_skipped, 1);
  EXPECT_GT(summary.shards.size(), 1u);

  const auto shards = TokenShards::open(*dir_ / "packed");
  ASSERT_EQ(shards->num_documents(), 12);
  EXPECT_EQ(shards->num_tokens(), summary.tokens);
  for (int64_t d = 0; d < 12; ++d) {
    // Line by line, blank lines skipped: the document is the concatenation of its lines' ids.
    std::ifstream in(files_[d]);
    std::vector<int32_t> expected;
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      const auto ids = tok.encode(line);
      expected.insert(expected.end(), ids.begin(), ids.end());
    }
    EXPECT_EQ(shards->document(d), expected) << files_[d];
  }
  EXPECT_EQ(Tokenizer::load(*dir_ / "packed/tokenizer.model").vocab_size(), 350);
}

TEST_F(TextCorpusTest, TruncatedShardStopsTheRunUnlessSkipping) {
  const auto tok = Tokenizer::load(*dir_ / "tok.model");
  PackTextOptions o;
  o.shard_bytes = 1024;
  pack_text(files_, tok, *dir_ / "damaged", o);
  const auto victim = *dir_ / "damaged/shard-00000.bin";
  std::filesystem::resize_file(victim, 100);
  config::DataConfig data;
  data.dataset = "text";
  data.path = *dir_ / "damaged";
  try {
    prepare_text_corpus(data, 0);
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(victim), std::string::npos) << e.what();
  }
  data.skip_corrupt = true;
  const auto corpus = prepare_text_corpus(data, 0);
  EXPECT_EQ(corpus.shards->skipped().size(), 1u);
  EXPECT_GT(corpus.shards->num_documents(), 0);
}

TEST_F(TextCorpusTest, RawTextIsTokenizedOnceIntoTheCache) {
  ScratchDir cache("textcache");
  ::setenv("BATCHLAB_CACHE_DIR", cache.path.c_str(), 1);
  config::DataConfig data;
  data.dataset = "text";
  data.path = (dir_->path / "corpus").string();

  const auto first = prepare_text_corpus(data, 300);
  EXPECT_EQ(first.tokenizer->vocab_size(), 300);
  EXPECT_EQ(first.shards->num_documents(), 12);
  EXPECT_EQ(first.source.rfind(cache.path.string(), 0), 0u) << first.source;
  const auto index = std::filesystem::path(first.source) / kShardIndexName;
  const auto written = std::filesystem::last_write_time(index);

  const auto again = prepare_text_corpus(data, 300);
  EXPECT_EQ(again.source, first.source);
  EXPECT_EQ(std::filesystem::last_write_time(index), written) << "reused, not rebuilt";

  const auto other = prepare_text_corpus(data, 320);  // another vocabulary: another entry
  EXPECT_NE(other.source, first.source);
  EXPECT_EQ(other.tokenizer->vocab_size(), 320);
  // No temporary directories left behind.
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(cache.path / "text")) {
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos);
    ++entries;
  }
  EXPECT_EQ(entries, 2);
  ::unsetenv("BATCHLAB_CACHE_DIR");
}

TEST_F(TextCorpusTest, PackTextDirectoryIsUsedAsIsAndMustMatchItsTokenizer) {
  const auto tok = Tokenizer::load(*dir_ / "tok.model");
  pack_text(files_, tok, *dir_ / "direct", PackTextOptions{});
  config::DataConfig data;
  data.dataset = "text";
  data.path = *dir_ / "direct";
  const auto corpus = prepare_text_corpus(data, 12345);  // the size is not used: no training
  EXPECT_EQ(corpus.source, data.path);
  EXPECT_EQ(corpus.tokenizer->vocab_size(), 350);

  TokenizerTrainOptions o;
  o.vocab_size = 300;
  train_tokenizer(files_, *dir_ / "other", o);
  data.tokenizer = *dir_ / "other.model";
  try {
    prepare_text_corpus(data, 0);
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("350"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("other.model"), std::string::npos) << e.what();
  }
  data.path = *dir_ / "nowhere";
  EXPECT_THROW(prepare_text_corpus(data, 0), InputError);
}

}  // namespace
}  // namespace batchlab::data
