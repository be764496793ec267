// Checkpoint, kill and resume through the real binary (issue: measurement and robustness).
#include <gtest/gtest.h>

#include <filesystem>

#include "core/config/loader.h"
#include "core/optim/factory.h"
#include "core/train/checkpoint.h"
#include "experiments/tasks/task_factory.h"
#include "tests/cli/cli_runner.h"

namespace batchlab::cli {
namespace {

namespace fs = std::filesystem;
using testing::query_csv;
using testing::run_batchlab;
using testing::shell_quote;
using testing::TempDir;

// 8 steps per epoch x 6 epochs = 48 steps; a checkpoint every 10 steps.
std::string resumable_config() {
  return std::string(testing::kTinyConfig) +
         "checkpoint_every = 10\n"
         "log_every = 1\n";
}

std::string train_cmd(const std::string& cfg, const std::string& db) {
  return "train " + shell_quote(cfg) + " --set schedule.epochs=6 --db " + shell_quote(db);
}

testing::CommandResult run_with_fault(const std::string& args, const std::string& fault) {
  setenv("BATCHLAB_TEST_FAULT", fault.c_str(), 1);
  auto r = run_batchlab(args);
  unsetenv("BATCHLAB_TEST_FAULT");
  return r;
}

// The model weights stored in the newest checkpoint of a run directory.
std::vector<torch::Tensor> checkpoint_weights(const std::string& cfg_path, const std::string& dir) {
  config::LoadOptions opts;
  opts.overrides = {"schedule.epochs=6"};
  auto cfg = config::load_experiment_file(cfg_path, opts);
  auto task = experiments::make_task(cfg.model, cfg.data, cfg.batch.bn_group, torch::kCPU);
  auto opt = optim::make_optimizer(cfg.optim, task->named_parameters(), cfg.optim.base_lr);
  train::CheckpointStore store(dir);
  std::vector<std::string> warnings;
  auto loaded = store.load_latest(config::run_id(cfg), task->model(), opt->optimizer(), warnings);
  EXPECT_TRUE(loaded.has_value()) << dir;
  EXPECT_EQ(loaded ? loaded->state.step : -1, 48);
  std::vector<torch::Tensor> out;
  for (auto& p : task->named_parameters()) out.push_back(p.tensor.detach().clone());
  return out;
}

std::string only_checkpoint_dir(const fs::path& root) {
  for (const auto& e : fs::directory_iterator(root / "checkpoints")) return e.path().string();
  return "";
}

TEST(ResumeCli, SigkillBetweenCheckpointsThenResumeMatchesAnUninterruptedRun) {
  TempDir dir("resume");
  const auto cfg = dir.file("tiny.toml", resumable_config());
  fs::create_directories(dir.path / "ref");
  fs::create_directories(dir.path / "killed");
  const auto ref_db = (dir.path / "ref" / "r.db").string();
  const auto db = (dir.path / "killed" / "k.db").string();

  auto ref = run_batchlab(train_cmd(cfg, ref_db));
  ASSERT_EQ(ref.exit_code, 0) << ref.output;

  auto killed = run_with_fault(train_cmd(cfg, db), "kill@25");  // checkpoints at 10 and 20
  EXPECT_NE(killed.exit_code, 0) << killed.output;
  EXPECT_NE(query_csv(db, "SELECT status FROM runs").find("running"), std::string::npos);

  auto resumed = run_batchlab(train_cmd(cfg, db));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resumed from step 20"), std::string::npos) << resumed.output;

  // Step rows 0..47 exactly once, evaluations once per epoch, status done.
  EXPECT_NE(query_csv(db, "SELECT count(*), count(DISTINCT step), min(step), max(step) FROM steps")
                .find("48,48,0,47"),
            std::string::npos);
  EXPECT_NE(query_csv(db, "SELECT count(*), max(step) FROM evals").find("6,48"), std::string::npos);
  EXPECT_NE(query_csv(db, "SELECT status, last_step FROM runs").find("done,48"), std::string::npos);
  // Same losses as the uninterrupted run at every step.
  auto losses = [&](const std::string& d) {
    return query_csv(d,
                     "SELECT group_concat(printf('%.6f', train_loss)) FROM (SELECT train_loss FROM "
                     "steps ORDER BY step)");
  };
  EXPECT_EQ(losses(db), losses(ref_db));

  auto a = checkpoint_weights(cfg, only_checkpoint_dir(dir.path / "ref"));
  auto b = checkpoint_weights(cfg, only_checkpoint_dir(dir.path / "killed"));
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  for (size_t i = 0; i < a.size(); ++i) {
    const double scale = std::max(a[i].abs().max().item<double>(), 1e-12);
    EXPECT_LT((a[i] - b[i]).abs().max().item<double>() / scale, 1e-6) << "parameter " << i;
  }
}

TEST(ResumeCli, SigtermLeavesACheckpointAndPreemptedStatusThenContinuesTheClock) {
  TempDir dir("term");
  const auto cfg = dir.file("tiny.toml", resumable_config());
  const auto db = (dir.path / "t.db").string();
  auto stopped = run_with_fault(train_cmd(cfg, db), "term@14");
  EXPECT_EQ(stopped.exit_code, 1) << stopped.output;
  EXPECT_NE(query_csv(db, "SELECT status, last_step FROM runs").find("preempted,15"),
            std::string::npos)
      << query_csv(db, "SELECT status, last_step, error FROM runs");
  const auto ckpt_dir = only_checkpoint_dir(dir.path);
  EXPECT_TRUE(fs::exists(fs::path(ckpt_dir) / "ckpt-000000000015.pt")) << ckpt_dir;
  const auto clock_before =
      query_csv(db, "SELECT printf('%.9f', wall_s) FROM steps WHERE step = 14");

  auto resumed = run_batchlab(train_cmd(cfg, db));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resumed from step 15"), std::string::npos) << resumed.output;
  EXPECT_NE(query_csv(db, "SELECT status, count(*) FROM runs").find("done,1"), std::string::npos);
  // The training clock continues: step 15's clock is later than step 14's, which was kept.
  EXPECT_EQ(query_csv(db, "SELECT printf('%.9f', wall_s) FROM steps WHERE step = 14"),
            clock_before);
  EXPECT_NE(query_csv(db,
                      "SELECT (SELECT wall_s FROM steps WHERE step = 15) > "
                      "(SELECT wall_s FROM steps WHERE step = 14)")
                .find("1"),
            std::string::npos);
}

// Every checkpoint unreadable (issue 35): the run says that none could be read and that it starts
// over from step 0 (no "falling back" past the oldest), and its runs row records why
// (runs.started_over), so a series that restarted is told apart from one that resumed.
TEST(ResumeCli, EveryCheckpointUnreadableStartsOverSayingSoAndRecordsIt) {
  TempDir dir("unreadable");
  const auto cfg = dir.file("tiny.toml", resumable_config());
  const auto db = (dir.path / "u.db").string();
  auto killed = run_with_fault(train_cmd(cfg, db), "kill@25");  // checkpoints at 10 and 20
  EXPECT_NE(killed.exit_code, 0) << killed.output;
  const auto ckpt_dir = only_checkpoint_dir(dir.path);
  for (const char* name : {"ckpt-000000000010.pt", "ckpt-000000000020.pt"}) {
    ASSERT_TRUE(fs::exists(fs::path(ckpt_dir) / name)) << name;
    fs::resize_file(fs::path(ckpt_dir) / name, 100);
  }
  auto restarted = run_batchlab(train_cmd(cfg, db));
  ASSERT_EQ(restarted.exit_code, 0) << restarted.output;
  const std::string& out = restarted.output;
  EXPECT_NE(out.find("ckpt-000000000020.pt: truncated checkpoint"), std::string::npos) << out;
  EXPECT_NE(out.find("falling back to ckpt-000000000010.pt"), std::string::npos) << out;
  EXPECT_NE(out.find("ckpt-000000000010.pt: truncated checkpoint"), std::string::npos) << out;
  EXPECT_NE(out.find("no checkpoint of this run could be read (2 files in " + ckpt_dir +
                     ", all unreadable): the run starts over from step 0"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("resumed from step"), std::string::npos) << out;
  // The row says so, and the series is the new attempt's alone.
  EXPECT_NE(query_csv(db,
                      "SELECT status, attempts, started_over LIKE 'no checkpoint of this run "
                      "could be read (2 files%' FROM runs")
                .find("done,2,1"),
            std::string::npos)
      << query_csv(db, "SELECT * FROM runs");
  EXPECT_NE(query_csv(db, "SELECT count(*), min(step), max(step) FROM steps").find("48,0,47"),
            std::string::npos);
}

TEST(ResumeCli, BlowUpEndsAsDivergedWithEarlierEvalsAndMilestonesIntact) {
  TempDir dir("diverge");
  const auto cfg = dir.file("tiny.toml", testing::kTinyConfig);
  const auto db = (dir.path / "d.db").string();
  // A 40-step warmup towards an absurd LR (25): evaluations every quarter epoch see the early,
  // sane steps and reach a chance-level target; the loss then explodes before the 48th step.
  auto r = run_batchlab(
      "train " + shell_quote(cfg) +
      " --set optim.base_lr=25.0 --set schedule.warmup_steps=40 --set schedule.epochs=6"
      " --set train.eval_every=0.25 --set 'train.target={metric=\"test_acc\", value=0.05}'"
      " --db " +
      shell_quote(db));
  EXPECT_EQ(r.exit_code, 0) << r.output;  // diverged is a result, not a failure
  auto run = query_csv(db, "SELECT status, last_step < 48, error LIKE '%step%' FROM runs");
  EXPECT_NE(run.find("diverged,1,1"), std::string::npos) << run;
  EXPECT_NE(query_csv(db, "SELECT count(*) >= 1 FROM evals").find("1"), std::string::npos);
  EXPECT_NE(query_csv(db, "SELECT count(*) FROM milestones").find("1"), std::string::npos);
  // Evaluations stop before the step at which the run diverged.
  EXPECT_NE(query_csv(db, "SELECT max(e.step) <= r.last_step FROM evals e, runs r").find("1"),
            std::string::npos);
}

TEST(ResumeCli, MalformedFaultHookIsBadInput) {
  TempDir dir("hook");
  const auto cfg = dir.file("tiny.toml", testing::kTinyConfig);
  auto r = run_with_fault(
      "train " + shell_quote(cfg) + " --db " + shell_quote((dir.path / "h.db").string()),
      "explode@3");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("BATCHLAB_TEST_FAULT"), std::string::npos);
}

}  // namespace
}  // namespace batchlab::cli
