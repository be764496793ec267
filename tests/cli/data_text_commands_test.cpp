// `batchlab data tokenizer` and `batchlab data pack-text` as a user runs them: the round trip from
// raw text to shards a "text" experiment reads, and exit code 2 with the bad path or value named.
#include <gtest/gtest.h>

#include "experiments/data/token_shards.h"
#include "experiments/data/tokenizer.h"
#include "tests/cli/cli_runner.h"
#include "tests/experiments/data/text_test_util.h"

namespace batchlab::cli {
namespace {

using testing::run_batchlab;
using testing::shell_quote;

class DataTextCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new data::testing::ScratchDir("datatextcli");
    files_ = data::testing::write_text_corpus(dir_->path / "corpus", 8, 50);
    const auto r = run_batchlab("data tokenizer " + shell_quote(*dir_ / "corpus") + " --out " +
                                shell_quote(*dir_ / "tok") + " --vocab-size 300");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    tokenizer_output_ = new std::string(r.output);
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete tokenizer_output_;
  }
  static data::testing::ScratchDir* dir_;
  static std::vector<std::string> files_;
  static std::string* tokenizer_output_;
};
data::testing::ScratchDir* DataTextCli::dir_ = nullptr;
std::vector<std::string> DataTextCli::files_;
std::string* DataTextCli::tokenizer_output_ = nullptr;

TEST_F(DataTextCli, TokenizerThenPackTextGivesShardsOfEveryFile) {
  EXPECT_NE(tokenizer_output_->find("300 pieces"), std::string::npos) << *tokenizer_output_;
  EXPECT_EQ(data::Tokenizer::load(*dir_ / "tok.model").vocab_size(), 300);

  const auto r = run_batchlab("data pack-text " + shell_quote(*dir_ / "corpus") + " --tokenizer " +
                              shell_quote(*dir_ / "tok.model") + " --out " +
                              shell_quote(*dir_ / "packed") + " --shard-mb 1 --threads 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("8 document(s)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("uint16"), std::string::npos) << r.output;
  const auto shards = data::TokenShards::open(*dir_ / "packed");
  EXPECT_EQ(shards->num_documents(), 8);
  EXPECT_EQ(shards->vocab_size(), 300);
  const auto tok = data::Tokenizer::load(*dir_ / "packed/tokenizer.model");
  // The first line of the first file opens the first document.
  std::ifstream in(files_.front());
  std::string line;
  std::getline(in, line);
  const auto ids = tok.encode(line);
  const auto doc = shards->document(0);
  ASSERT_GE(doc.size(), ids.size());
  EXPECT_TRUE(std::equal(ids.begin(), ids.end(), doc.begin()));
}

TEST_F(DataTextCli, BadArgumentsExitTwoNamingThePathOrValue) {
  const auto corpus = shell_quote(*dir_ / "corpus");
  struct Case {
    std::string args;
    std::string expected;  // text the message must contain
  };
  const std::vector<Case> cases = {
      {"data tokenizer " + shell_quote(*dir_ / "absent") + " --out x --vocab-size 300",
       *dir_ / "absent"},
      {"data tokenizer " + corpus + " --out " + shell_quote(*dir_ / "t2") + " --vocab-size lots",
       "lots"},
      {"data tokenizer " + corpus + " --out " + shell_quote(*dir_ / "t3") + " --vocab-size 2",
       "--vocab-size = 2"},
      {"data tokenizer " + corpus + " --out " + shell_quote(*dir_ / "t4") + " --vocab-size 90000",
       "Vocabulary size"},
      {"data tokenizer " + corpus + " --vocab-size 300", "--out"},
      {"data tokenizer " + corpus + " --out " + shell_quote(*dir_ / "no/such/dir/t") +
           " --vocab-size 300",
       *dir_ / "no/such/dir"},
      {"data pack-text " + corpus + " --tokenizer " + shell_quote(*dir_ / "none.model") +
           " --out " + shell_quote(*dir_ / "p1"),
       *dir_ / "none.model"},
      {"data pack-text " + corpus + " --tokenizer " + shell_quote(files_.front()) + " --out " +
           shell_quote(*dir_ / "p2"),
       files_.front()},
      {"data pack-text " + corpus + " --out " + shell_quote(*dir_ / "p3"), "--tokenizer"},
      {"data pack-text " + corpus + " --tokenizer " + shell_quote(*dir_ / "tok.model") + " --out " +
           shell_quote(*dir_ / "p4") + " --shard-mb 0",
       "--shard-mb = 0"},
      {"data pack-text --tokenizer " + shell_quote(*dir_ / "tok.model") + " --out " +
           shell_quote(*dir_ / "p5"),
       "FILE_OR_DIR"},
  };
  for (const auto& c : cases) {
    const auto r = run_batchlab(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.expected), std::string::npos) << c.args << "\n" << r.output;
  }
}

TEST_F(DataTextCli, PackTextRefusesToOverwriteShards) {
  const auto args = "data pack-text " + shell_quote(files_.front()) + " --tokenizer " +
                    shell_quote(*dir_ / "tok.model") + " --out " + shell_quote(*dir_ / "once");
  ASSERT_EQ(run_batchlab(args).exit_code, 0);
  const auto again = run_batchlab(args);
  EXPECT_EQ(again.exit_code, 2) << again.output;
  EXPECT_NE(again.output.find(*dir_ / "once"), std::string::npos) << again.output;
}

TEST_F(DataTextCli, HelpExitsZero) {
  for (const char* sub : {"tokenizer", "pack-text"}) {
    const auto r = run_batchlab(std::string("data ") + sub + " --help");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find(std::string("batchlab data ") + sub), std::string::npos) << r.output;
  }
}

}  // namespace
}  // namespace batchlab::cli
