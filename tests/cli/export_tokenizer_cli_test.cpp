// The tokenizer a run trained with is recorded with it (issue 45): `train` writes the SHA-256 of
// its tokenizer file into runs.config_toml as data.tokenizer_sha256 (the run id stays the job's),
// and `export --format hf` refuses, with exit 2 naming both hashes and the fix, to pair the
// weights with a tokenizer retrained at the same path since: it would load fine and map text to
// ids the weights never saw. Before, the folder was written with whatever file sat there.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>

#include "core/config/init_file.h"
#include "tests/cli/cli_runner.h"
#include "tests/experiments/data/text_test_util.h"

namespace batchlab::cli {
namespace {

using testing::contains;
using testing::query_csv;
using testing::run_batchlab;
using testing::run_id_of;
using testing::shell_quote;
using testing::TempDir;

// A tokenizer of 300 pieces trained on `corpus`, at PREFIX.model.
testing::CommandResult train_tokenizer_at(const std::string& corpus, const std::string& prefix) {
  return run_batchlab("data tokenizer " + shell_quote(corpus) + " --out " + shell_quote(prefix) +
                      " --vocab-size 300");
}

std::string bert_text_config(const TempDir& dir, const std::string& corpus,
                             const std::string& tokenizer) {
  return dir.file("bert.toml",
                  "schema_version = 1\n"
                  "[model]\narch = \"bert_tiny\"\nvocab_size = 300\nmax_seq_len = 32\n"
                  "[data]\ndataset = \"text\"\npath = \"" +
                      corpus + "\"\ntokenizer = \"" + tokenizer +
                      "\"\nseq_len = 32\neval_train_samples = 16\n"
                      "[batch]\nglobal = 8\n"
                      "[optim]\nname = \"adamw\"\nbase_lr = 0.001\nbase_batch = 8\n"
                      "[schedule]\nsteps = 0\n"
                      "[train]\nthreads = 1\ncheckpoint_every = 1\n");
}

TEST(ExportTokenizer, AnHfFolderIsRefusedWhenTheTokenizerWasRetrainedAtTheRunsPath) {
  TempDir dir("export-tokenizer");
  ::setenv("BATCHLAB_CACHE_DIR", (dir.path / "cache").c_str(), 1);
  const std::string corpus = (dir.path / "corpus").string();
  const std::string other = (dir.path / "other").string();
  data::testing::write_text_corpus(corpus, 10, 40, 1);
  data::testing::write_text_corpus(other, 6, 30, 77);
  const std::string prefix = (dir.path / "tok").string(), tokenizer = prefix + ".model";
  const auto trained_tok = train_tokenizer_at(corpus, prefix);
  ASSERT_EQ(trained_tok.exit_code, 0) << trained_tok.output;
  const std::string sha = config::file_sha256(tokenizer);

  const std::string db = (dir.path / "bert.db").string();
  const auto trained =
      run_batchlab("train " + shell_quote(bert_text_config(dir, corpus, tokenizer)) + " --db " +
                   shell_quote(db));
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  const std::string id = run_id_of(trained.output);
  const std::string recorded = "instr(config_toml, 'tokenizer_sha256 = \"" + sha + "\"')";
  EXPECT_EQ(query_csv(db, "SELECT " + recorded + " > 0 AS recorded FROM runs"), "recorded\n1\n")
      << "the hash is recorded with the run";
  const auto export_to = [&](const std::string& out) {
    return run_batchlab("export --db " + shell_quote(db) + " --run " + id + " --format hf --out " +
                        shell_quote((dir.path / out).string()));
  };
  const auto fine = export_to("same");
  EXPECT_EQ(fine.exit_code, 0) << fine.output;

  // The same path, the same vocabulary size, other pieces and scores.
  const auto retrained = train_tokenizer_at(other, prefix);
  ASSERT_EQ(retrained.exit_code, 0) << retrained.output;
  const std::string now = config::file_sha256(tokenizer);
  ASSERT_NE(now, sha) << "the retrained tokenizer must differ for this test to mean anything";
  const auto refused = export_to("stale");
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_TRUE(contains(refused.output, sha)) << refused.output;
  EXPECT_TRUE(contains(refused.output, now)) << refused.output;
  EXPECT_TRUE(
      contains(refused.output, "Put the tokenizer the run trained with back at " + tokenizer))
      << refused.output;
  EXPECT_FALSE(std::filesystem::exists(dir.path / "stale" / "model.safetensors"));
  ::unsetenv("BATCHLAB_CACHE_DIR");
}

}  // namespace
}  // namespace batchlab::cli
