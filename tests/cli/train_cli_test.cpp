// The spine's command-line contract: exit codes, nothing recorded for bad input, stable run ids,
// read-only queries. Runs the real binary on a tiny synthetic experiment.
#include <gtest/gtest.h>

#include <regex>

#include "tests/cli/cli_runner.h"

namespace batchlab::cli {
namespace {

using testing::run_batchlab;
using testing::run_id_of;
using testing::shell_quote;
using testing::TempDir;

TEST(TrainCli, BadConfigReportsEveryProblemWithPositionsAndWritesNothing) {
  TempDir dir("badcfg");
  // Line 3: misspelled key; line 5: wrong type; line 7: 1000 is not 48 x a whole accumulation.
  const auto cfg = dir.file("bad.toml",
                            "schema_version = 1\n"
                            "[optim]\n"
                            "lrr = 0.1\n"
                            "[schedule]\n"
                            "epochs = \"three\"\n"
                            "[batch]\n"
                            "global = 1000\n"
                            "micro = 48\n");
  const auto db = (dir.path / "out.db").string();
  auto r = run_batchlab("train " + shell_quote(cfg) + " --db " + shell_quote(db));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("bad.toml:3:1: optim.lrr"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("did you mean"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("bad.toml:5:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("schedule.epochs"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("bad.toml:7:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("48"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(db)) << "bad input must not create the database";
}

TEST(TrainCli, ATextModelOnImageDataIsAConfigErrorBeforeAnythingLoads) {
  TempDir dir("family");
  const auto cfg = dir.file("tiny.toml", testing::kTinyConfig);
  const auto db = (dir.path / "out.db").string();
  const auto r = run_batchlab("train " + shell_quote(cfg) + " --db " + shell_quote(db) +
                              " --set model.arch=bert_tiny");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("model.arch = \"bert_tiny\": a masked-language model; data.dataset = "
                          "\"synthetic\" is an image data set"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("| run "), std::string::npos) << "the run started: " << r.output;
  EXPECT_FALSE(std::filesystem::exists(db));
}

TEST(TrainCli, BadInputLeavesAnExistingDatabaseUntouched) {
  TempDir dir("keep");
  const auto good = dir.file("tiny.toml", testing::kTinyConfig);
  const auto db = (dir.path / "keep.db").string();
  ASSERT_EQ(run_batchlab("train " + shell_quote(good) + " --db " + shell_quote(db)).exit_code, 0);
  auto before = run_batchlab(
      "query --db " + shell_quote(db) +
      " \"SELECT (SELECT count(*) FROM steps) || ',' || (SELECT count(*) FROM runs)\"");
  auto bad =
      run_batchlab("train " + shell_quote(good) + " --set batch.global=7 --db " + shell_quote(db));
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  auto after = run_batchlab(
      "query --db " + shell_quote(db) +
      " \"SELECT (SELECT count(*) FROM steps) || ',' || (SELECT count(*) FROM runs)\"");
  EXPECT_EQ(before.output, after.output);
}

TEST(TrainCli, SameConfigSameRunIdAndSetChangesIt) {
  TempDir dir("runid");
  const auto cfg = dir.file("tiny.toml", testing::kTinyConfig);
  const auto db = (dir.path / "ids.db").string();
  auto a = run_batchlab("train " + shell_quote(cfg) + " --db " + shell_quote(db));
  auto b = run_batchlab("train " + shell_quote(cfg) + " --db " + shell_quote(db));
  auto c =
      run_batchlab("train " + shell_quote(cfg) + " --set batch.global=128 --db " + shell_quote(db));
  ASSERT_EQ(a.exit_code, 0) << a.output;
  ASSERT_EQ(b.exit_code, 0) << b.output;
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_FALSE(run_id_of(a.output).empty());
  EXPECT_EQ(run_id_of(a.output), run_id_of(b.output));
  EXPECT_NE(run_id_of(a.output), run_id_of(c.output));
  // Two runs, and the repeated run rewrote its rows instead of duplicating them.
  auto q = run_batchlab("query --db " + shell_quote(db) +
                        " --format csv "
                        "\"SELECT count(*) AS runs, (SELECT count(*) FROM steps WHERE run_id = '" +
                        run_id_of(a.output) + "') AS steps FROM runs\"");
  EXPECT_NE(q.output.find("2,16"), std::string::npos) << q.output;  // 512/64 x 2 epochs = 16 steps
  // A --run-id that does not belong to the config is bad input.
  auto wrong = run_batchlab("train " + shell_quote(cfg) + " --run-id 0123456789abcdef --db " +
                            shell_quote(db));
  EXPECT_EQ(wrong.exit_code, 2) << wrong.output;
}

TEST(TrainCli, EvalRowsCarryTheGeneralizationGap) {
  TempDir dir("gap");
  const auto cfg = dir.file("tiny.toml", testing::kTinyConfig);
  const auto db = (dir.path / "gap.db").string();
  ASSERT_EQ(run_batchlab("train " + shell_quote(cfg) + " --db " + shell_quote(db)).exit_code, 0);
  auto q = run_batchlab(
      "query --db " + shell_quote(db) +
      " --format csv "
      "\"SELECT count(*) AS n, sum(abs(gap_loss - (test_loss - train_loss)) < 1e-12) AS ok,"
      " sum(abs(gap_acc - (train_acc - test_acc)) < 1e-12) AS ok_acc FROM evals\"");
  EXPECT_NE(q.output.find("2,2,2"), std::string::npos) << q.output;
  auto run = run_batchlab(
      "query --db " + shell_quote(db) +
      " --format csv "
      "\"SELECT status, global_batch, micro_batch, accum_steps, world_size FROM runs\"");
  EXPECT_NE(run.output.find("done,64,32,2,1"), std::string::npos) << run.output;
}

TEST(QueryCli, RejectsWritesAndMissingDatabases) {
  TempDir dir("query");
  const auto cfg = dir.file("tiny.toml", testing::kTinyConfig);
  const auto db = (dir.path / "q.db").string();
  ASSERT_EQ(run_batchlab("train " + shell_quote(cfg) + " --db " + shell_quote(db)).exit_code, 0);
  auto w = run_batchlab("query --db " + shell_quote(db) + " \"DELETE FROM steps\"");
  EXPECT_EQ(w.exit_code, 2) << w.output;
  auto n = run_batchlab("query --db " + shell_quote(db) +
                        " --format csv \"SELECT count(*) AS n FROM steps\"");
  EXPECT_NE(n.output.find("16"), std::string::npos) << n.output;
  auto missing =
      run_batchlab("query --db " + shell_quote((dir.path / "nope.db").string()) + " \"SELECT 1\"");
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
}

TEST(Cli, UsageErrorsExitTwoAndVersionNamesTheLibraries) {
  EXPECT_EQ(run_batchlab("frobnicate").exit_code, 2);
  EXPECT_EQ(run_batchlab("train").exit_code, 2);
  EXPECT_EQ(run_batchlab("train x.toml --bogus 1").exit_code, 2);
  EXPECT_EQ(run_batchlab("train /nonexistent/x.toml").exit_code, 2);
  auto v = run_batchlab("version");
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_NE(v.output.find("LibTorch"), std::string::npos);
  EXPECT_NE(v.output.find("BLAS"), std::string::npos);
  EXPECT_NE(v.output.find("threads"), std::string::npos);
}

}  // namespace
}  // namespace batchlab::cli
