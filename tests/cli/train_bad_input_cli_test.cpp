// `batchlab train` on input the config rules must catch before the run starts (issue 35): a
// warmup longer than the run in other units than the run, a learning rate no float can hold; and
// a thread count far beyond the machine's cores, which is warned about. Each is reported before
// the run's banner ("batchlab ... | run ID | ..."), with the file position or the --set it came
// from. Runs the real binary on the tiny synthetic experiment (512 examples / batch 64 = 8 steps
// per epoch, 2 epochs = 16 steps).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <thread>

#include "tests/cli/cli_runner.h"

namespace batchlab::cli {
namespace {

using testing::contains;
using testing::run_batchlab;
using testing::shell_quote;
using testing::TempDir;

bool banner_printed(const std::string& output) { return contains(output, "| run "); }

TEST(TrainBadInput, AWarmupLongerThanTheRunIsLocatedAndReportedWithTheOtherProblems) {
  TempDir dir("warmup");
  const std::string config = dir.file("tiny.toml", testing::kTinyConfig);
  const std::string db = (dir.path / "r.db").string();
  const auto set = run_batchlab("train " + shell_quote(config) + " --db " + shell_quote(db) +
                                " --set schedule.warmup_steps=100 --set optim.momentum=2");
  EXPECT_EQ(set.exit_code, 2) << set.output;
  EXPECT_TRUE(contains(set.output,
                       "--set: schedule.warmup_steps = 100: longer than the run: schedule.epochs = "
                       "2.0 at 8 steps per epoch is 16 steps; pick a warmup of at most 16 steps "
                       "(from --set 'schedule.warmup_steps=100')"))
      << set.output;
  // Together with the other problems, in one error, before anything ran.
  EXPECT_TRUE(contains(set.output, "2 configuration problems")) << set.output;
  EXPECT_TRUE(contains(set.output, "--set: optim.momentum = 2.0: must be in [0, 1)")) << set.output;
  EXPECT_FALSE(banner_printed(set.output)) << set.output;

  // The same value in the file: its line and column.
  std::string text = testing::kTinyConfig;
  text.replace(text.find("epochs = 2\n"), 11, "epochs = 2\nwarmup_steps = 100\n");  // line 18
  const std::string file = dir.file("warm.toml", text);
  const auto in_file = run_batchlab("train " + shell_quote(file) + " --db " + shell_quote(db));
  EXPECT_EQ(in_file.exit_code, 2) << in_file.output;
  EXPECT_TRUE(contains(in_file.output, file + ":18:16: schedule.warmup_steps = 100: longer than"))
      << in_file.output;
  EXPECT_FALSE(banner_printed(in_file.output)) << in_file.output;

  // A warmup in epochs longer than a run in steps.
  const auto epochs = run_batchlab("train " + shell_quote(config) + " --db " + shell_quote(db) +
                                   " --set schedule.steps=16 --set schedule.warmup_epochs=3");
  EXPECT_EQ(epochs.exit_code, 2) << epochs.output;
  EXPECT_TRUE(contains(epochs.output,
                       "--set: schedule.warmup_epochs = 3.0: longer than the run: at 8 steps per "
                       "epoch this warmup is 24 steps and schedule.steps = 16; pick a warmup of "
                       "at most 2 epochs"))
      << epochs.output;
  EXPECT_FALSE(std::filesystem::exists(db));
}

TEST(TrainBadInput, ALearningRateNoFloatCanHoldIsRefusedAtValidation) {
  TempDir dir("float");
  const std::string config = dir.file("tiny.toml", testing::kTinyConfig);
  const std::string db = (dir.path / "r.db").string();
  const auto lr = run_batchlab("train " + shell_quote(config) + " --db " + shell_quote(db) +
                               " --set optim.base_lr=1e40");
  EXPECT_EQ(lr.exit_code, 2) << lr.output;
  EXPECT_TRUE(contains(lr.output, "--set: optim.base_lr = 1e+40: ")) << lr.output;
  EXPECT_TRUE(contains(lr.output, "largest float32")) << lr.output;
  EXPECT_FALSE(banner_printed(lr.output)) << lr.output;

  // A base LR that is a float, scaled past the largest one: 1e38 x 64 / 1 (linear scaling).
  const auto scaled =
      run_batchlab("train " + shell_quote(config) + " --db " + shell_quote(db) +
                   " --set optim.base_lr=1e38 --set optim.scaling=linear --set optim.base_batch=1");
  EXPECT_EQ(scaled.exit_code, 2) << scaled.output;
  EXPECT_TRUE(contains(scaled.output,
                       "optim.base_lr = 1e+38: the peak learning rate, 1e+38 x 64 (linear: "
                       "batch.global 64 / optim.base_batch 1) = 6.4e+39, is beyond the largest "
                       "float32 (3.4e+38)"))
      << scaled.output;

  // The other float keys that reach the parameters as a float: weight decay and the final LR.
  const auto decay = run_batchlab("train " + shell_quote(config) + " --db " + shell_quote(db) +
                                  " --set optim.weight_decay=1e40 --set schedule.decay=linear "
                                  "--set schedule.end_lr=1e39");
  EXPECT_EQ(decay.exit_code, 2) << decay.output;
  EXPECT_TRUE(contains(decay.output, "--set: optim.weight_decay = 1e+40: ")) << decay.output;
  EXPECT_TRUE(contains(decay.output, "--set: schedule.end_lr = 1e+39: ")) << decay.output;
  EXPECT_FALSE(banner_printed(decay.output)) << decay.output;
  EXPECT_FALSE(std::filesystem::exists(db));
}

TEST(TrainBadInput, ThreadsFarBeyondTheCoresAreWarnedAboutBeforeTheRun) {
  TempDir dir("threads");
  const std::string config = dir.file("tiny.toml", testing::kTinyConfig);
  const std::string db = (dir.path / "r.db").string();
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const std::string many = std::to_string(2 * cores + 1);
  const auto r = run_batchlab("train " + shell_quote(config) + " --db " + shell_quote(db) +
                              " --set schedule.steps=1 --set train.threads=" + many);
  // A warning, not an error: the same config may run on a machine with more cores.
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const std::string warning = "warning: --set: train.threads = " + many + ": more than 2 x the " +
                              std::to_string(cores) + " cores of this machine";
  EXPECT_TRUE(contains(r.output, warning)) << r.output;
  EXPECT_LT(r.output.find(warning), r.output.find("| run ")) << r.output;

  // Within the factor: no warning.
  const auto fine =
      run_batchlab("train " + shell_quote(config) + " --db " + shell_quote(db) +
                   " --set schedule.steps=1 --set train.threads=" + std::to_string(cores));
  EXPECT_EQ(fine.exit_code, 0) << fine.output;
  EXPECT_FALSE(contains(fine.output, "warning")) << fine.output;
}

}  // namespace
}  // namespace batchlab::cli
