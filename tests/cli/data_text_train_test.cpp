// `batchlab train` on a "text" experiment from raw text with nothing prepared: the tokenizer and
// shards are built into the cache, bert_tiny trains, evaluations are recorded; a vocabulary that
// conflicts with a packed corpus's tokenizer exits 2 before anything is written.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "tests/cli/cli_runner.h"
#include "tests/experiments/data/text_test_util.h"

namespace batchlab::cli {
namespace {

using testing::run_batchlab;
using testing::shell_quote;

std::string tiny_text_config(const std::string& path, int64_t vocab) {
  return "schema_version = 1\n"
         "[model]\narch = \"bert_tiny\"\nvocab_size = " +
         std::to_string(vocab) +
         "\nmax_seq_len = 32\ndropout = 0.0\n"
         "[data]\ndataset = \"text\"\npath = \"" +
         path +
         "\"\nseq_len = 32\n"
         "eval_train_samples = 64\n"
         "[batch]\nglobal = 16\n"
         "[optim]\nname = \"adamw\"\nbase_lr = 0.003\nbase_batch = 16\n"
         "[schedule]\nsteps = 12\n"
         "[train]\nthreads = 1\neval_every = 0.05\n";
}

TEST(DataTextTrain, RawTextCorpusTrainsAndRecordsMlmEvaluations) {
  data::testing::ScratchDir dir("texttrain");
  data::testing::write_text_corpus(dir.path / "corpus", 20, 40);
  ::setenv("BATCHLAB_CACHE_DIR", (dir / "cache").c_str(), 1);
  const auto cfg = dir.path / "tiny.toml";
  std::ofstream(cfg) << tiny_text_config(dir / "corpus", 300);
  const auto db = dir / "runs.db";

  const auto r = run_batchlab("train " + shell_quote(cfg.string()) + " --db " + shell_quote(db));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("once into the cache"), std::string::npos) << r.output;
  const auto q = run_batchlab("query --db " + shell_quote(db) +
                              " \"SELECT count(*) || ',' || (min(test_loss) > 0) || ',' || "
                              "(max(test_acc) <= 1) FROM evals\"");
  ASSERT_EQ(q.exit_code, 0) << q.output;
  EXPECT_NE(q.output.find(",1,1"), std::string::npos) << q.output;
  // The first evaluation's test loss is near the uniform guess over 300 pieces, the last lower.
  const auto losses = run_batchlab("query --db " + shell_quote(db) +
                                   " \"SELECT CASE WHEN "
                                   "(SELECT test_loss FROM evals ORDER BY step DESC LIMIT 1) < "
                                   "(SELECT test_loss FROM evals ORDER BY step LIMIT 1) THEN "
                                   "'fell' ELSE 'rose' END AS trend\"");
  EXPECT_NE(losses.output.find("fell"), std::string::npos) << losses.output;

  // The second run reuses the cache.
  const auto again =
      run_batchlab("train " + shell_quote(cfg.string()) + " --db " + shell_quote(dir / "again.db"));
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(again.output.find("once into the cache"), std::string::npos) << again.output;
  ::unsetenv("BATCHLAB_CACHE_DIR");
}

TEST(DataTextTrain, VocabularyConflictingWithTheTokenizerExitsTwo) {
  data::testing::ScratchDir dir("textconflict");
  data::testing::write_text_corpus(dir.path / "corpus", 10, 40);
  ASSERT_EQ(run_batchlab("data tokenizer " + shell_quote(dir / "corpus") + " --out " +
                         shell_quote(dir / "tok") + " --vocab-size 300")
                .exit_code,
            0);
  ASSERT_EQ(run_batchlab("data pack-text " + shell_quote(dir / "corpus") + " --tokenizer " +
                         shell_quote(dir / "tok.model") + " --out " + shell_quote(dir / "packed"))
                .exit_code,
            0);
  const auto cfg = dir.path / "conflict.toml";
  std::ofstream(cfg) << tiny_text_config(dir / "packed", 500);
  const auto db = dir / "never.db";
  const auto r = run_batchlab("train " + shell_quote(cfg.string()) + " --db " + shell_quote(db));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("model.vocab_size = 500"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("300"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(db));
}

}  // namespace
}  // namespace batchlab::cli
