// Acceptance 3 of the data-parallelism issue (slow: a few minutes on 2 cores): the spine experiment
// on the real Fashion-MNIST, run as 2 local Gloo ranks, reaches the spine's bar (test accuracy
// >= 0.88 at the end) and records world_size 2.
#include <gtest/gtest.h>

#include <chrono>
#include <sstream>

#include "tests/cli/cli_runner.h"
#include "tests/test_paths.h"

namespace batchlab::cli {
namespace {

using testing::query_csv;
using testing::run_batchlab;
using testing::shell_quote;
using testing::TempDir;

TEST(NprocFashionMnist, TwoRanksReachTheSpineBarAndRecordWorldSizeTwo) {
  TempDir dir("nprocfm");
  const auto db = (dir.path / "fm.db").string();
  const std::string cfg =
      std::string(test_paths::source_dir()) + "/experiments/configs/fashion_mnist.toml";
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run_batchlab("train " + shell_quote(cfg) + " --nproc 2 --db " + shell_quote(db));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.exit_code, 0) << r.output;

  EXPECT_EQ(
      query_csv(db, "SELECT world_size, global_batch, micro_batch, accum_steps, status FROM runs"),
      "world_size,global_batch,micro_batch,accum_steps,status\n2,128,64,1,done\n");
  std::istringstream last(
      query_csv(db, "SELECT test_acc, wall_s FROM evals ORDER BY step DESC LIMIT 1"));
  std::string header, row;
  std::getline(last, header);
  std::getline(last, row);
  const double test_acc = std::stod(row.substr(0, row.find(',')));
  const double train_s = std::stod(row.substr(row.find(',') + 1));
  std::cout << "fashion_mnist --nproc 2: final test_acc " << test_acc << ", training clock "
            << train_s << " s, whole command " << seconds << " s\n";
  EXPECT_GE(test_acc, 0.88) << r.output;
  EXPECT_NE(query_csv(db, "SELECT metric FROM milestones").find("test_acc"), std::string::npos);
}

}  // namespace
}  // namespace batchlab::cli
