// `batchlab train --nproc N` through the real binary: ranks as processes, records from rank 0 only,
// the same training as one process, bad input refused before any rank starts, and a rank that dies
// or hangs ending the job with a clear error instead of a hang (acceptance 2 of the
// data-parallelism issue).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <sstream>

#include "tests/cli/cli_runner.h"

namespace batchlab::cli {
namespace {

using testing::query_csv;
using testing::run_batchlab;
using testing::shell_quote;
using testing::TempDir;

std::vector<double> column(const std::string& csv) {
  std::vector<double> out;
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(std::stod(line));
  }
  return out;
}

struct Timed {
  testing::CommandResult result;
  double seconds = 0.0;
};

Timed run_timed(const std::string& args, const char* fault = nullptr) {
  if (fault) setenv("BATCHLAB_TEST_FAULT", fault, 1);
  const auto t0 = std::chrono::steady_clock::now();
  Timed t;
  t.result = run_batchlab(args);
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (fault) unsetenv("BATCHLAB_TEST_FAULT");
  return t;
}

TEST(NprocCli, TwoRanksTrainLikeOneProcessAndRank0RecordsWorldSizeTwo) {
  TempDir dir("nproc");
  const auto cfg = dir.file("tiny.toml", std::string(testing::kTinyConfig) + "log_every = 1\n");
  const auto db2 = (dir.path / "two.db").string();
  const auto db1 = (dir.path / "one.db").string();

  // 2 ranks x micro 32 against 1 process x micro 32 x accumulation 2: the same batch-norm groups.
  auto two = run_batchlab("train " + shell_quote(cfg) + " --nproc 2 --db " + shell_quote(db2));
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_NE(two.output.find("[rank 1] "), std::string::npos) << two.output;
  EXPECT_NE(two.output.find("rank 1 of 2"), std::string::npos) << two.output;
  EXPECT_NE(two.output.find("all 2 ranks finished"), std::string::npos) << two.output;
  auto one =
      run_batchlab("train " + shell_quote(cfg) + " --set batch.micro=32 --db " + shell_quote(db1));
  ASSERT_EQ(one.exit_code, 0) << one.output;

  EXPECT_EQ(
      query_csv(db2, "SELECT world_size, micro_batch, accum_steps, global_batch, status FROM runs"),
      "world_size,micro_batch,accum_steps,global_batch,status\n2,32,1,64,done\n");
  EXPECT_EQ(query_csv(db1, "SELECT world_size, micro_batch, accum_steps FROM runs"),
            "world_size,micro_batch,accum_steps\n1,32,2\n");
  // One row per step (rank 0 alone writes), and the losses of the same computation.
  const auto l2 = column(query_csv(db2, "SELECT train_loss FROM steps ORDER BY step"));
  const auto l1 = column(query_csv(db1, "SELECT train_loss FROM steps ORDER BY step"));
  ASSERT_EQ(l2.size(), 16u);
  ASSERT_EQ(l1.size(), 16u);
  for (size_t s = 0; s < l1.size(); ++s) EXPECT_NEAR(l2[s], l1[s], 1e-4 * l1[s]) << "step " << s;
  EXPECT_EQ(column(query_csv(db2, "SELECT count(*) FROM evals")), std::vector<double>{2});
}

TEST(NprocCli, BadInputIsRefusedBeforeAnyRankStarts) {
  TempDir dir("nprocbad");
  const auto cfg = dir.file("tiny.toml", testing::kTinyConfig);
  // 64 is not 2 ranks x micro 48 x a whole accumulation.
  auto r = run_batchlab("train " + shell_quote(cfg) + " --nproc 2 --set batch.micro=48 --db " +
                        shell_quote((dir.path / "x.db").string()));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("world_size (2)"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("[rank"), std::string::npos) << r.output;
  EXPECT_EQ(run_batchlab("train " + shell_quote(cfg) + " --nproc 0").exit_code, 2);
}

std::string faulty_config(const TempDir& dir, const std::string& timeout) {
  return dir.file("tiny.toml", std::string(testing::kTinyConfig) +
                                   "log_every = 1\ndist_timeout = \"" + timeout + "\"\n");
}

TEST(NprocCli, AKilledRankEndsTheJobWithAClearErrorNotAHang) {
  TempDir dir("nprockill");
  const auto cfg = faulty_config(dir, "5s");
  const auto db = (dir.path / "k.db").string();
  auto t = run_timed(
      "train " + shell_quote(cfg) + " --set schedule.epochs=20 --nproc 2 --db " + shell_quote(db),
      "kill@3,rank=1");
  const auto& out = t.result.output;
  EXPECT_EQ(t.result.exit_code, 1) << out;
  // The launcher names the rank that died first and how.
  EXPECT_NE(out.find("rank 1 of 2 (pid"), std::string::npos) << out;
  EXPECT_NE(out.find("killed by signal 9 (SIGKILL)"), std::string::npos) << out;
  // The survivor reports its own error: which rank, which collective, the timeout.
  EXPECT_NE(out.find("[rank 0] batchlab train: error: rank 0 of 2: "), std::string::npos) << out;
  EXPECT_NE(out.find("train.dist_timeout = 5s"), std::string::npos) << out;
  EXPECT_NE(out.find("rank 0 exited with status 1"), std::string::npos) << out;
  // A dead peer closes its sockets: the survivor does not even wait for the timeout.
  EXPECT_LT(t.seconds, 40.0) << out;
  const auto status = query_csv(db, "SELECT status, error FROM runs");
  EXPECT_NE(status.find("failed"), std::string::npos) << status;
  EXPECT_NE(status.find("rank 0 of 2"), std::string::npos) << status;
}

// A write to a socket a dead peer closed raises SIGPIPE in the writer; its default action ended
// rank 0 with the run left 'running' and no error (CI, 2026-11-28: "rank 0 was killed by signal 13
// (SIGPIPE)"). A rank ignores it, so the failed write comes back as an error it reports; here the
// signal alone, with no dead peer, must not end a rank that can go on.
TEST(NprocCli, ABrokenPipeSignalDoesNotEndARank) {
  TempDir dir("nprocpipe");
  const auto cfg = faulty_config(dir, "5s");
  const auto db = (dir.path / "p.db").string();
  auto t = run_timed("train " + shell_quote(cfg) + " --nproc 2 --db " + shell_quote(db),
                     "pipe@3,rank=0");
  EXPECT_EQ(t.result.exit_code, 0) << t.result.output;
  EXPECT_EQ(t.result.output.find("SIGPIPE"), std::string::npos) << t.result.output;
  EXPECT_NE(query_csv(db, "SELECT status FROM runs").find("done"), std::string::npos);
}

TEST(NprocCli, AHangingRankMakesTheOthersGiveUpAfterTheTimeout) {
  TempDir dir("nprochang");
  const auto cfg = faulty_config(dir, "3s");
  auto t = run_timed("train " + shell_quote(cfg) + " --set schedule.epochs=20 --nproc 2 --db " +
                         shell_quote((dir.path / "h.db").string()),
                     "hang@3,rank=1");
  const auto& out = t.result.output;
  EXPECT_EQ(t.result.exit_code, 1) << out;
  // Rank 1 stopped answering (SIGSTOP) without exiting: rank 0 fails first, after the timeout.
  EXPECT_NE(out.find("[rank 0] batchlab train: error: rank 0 of 2: "), std::string::npos) << out;
  EXPECT_NE(out.find("train.dist_timeout = 3s"), std::string::npos) << out;
  EXPECT_NE(out.find("batchlab train: rank 0 of 2 (pid"), std::string::npos) << out;
  EXPECT_NE(out.find("sending SIGTERM"), std::string::npos) << out;
  EXPECT_LT(t.seconds, 40.0) << out;
}

}  // namespace
}  // namespace batchlab::cli
