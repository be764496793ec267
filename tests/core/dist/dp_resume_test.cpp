// A data-parallel run stopped by a signal (seen by one rank only) checkpoints on a step all ranks
// agree on, and resuming it ends with the weights of an uninterrupted run.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>

#include "core/config/experiment_config.h"
#include "core/train/trainer.h"
#include "tests/core/dist/dist_test_util.h"
#include "tests/core/train/toy_task.h"

namespace batchlab::dist {
namespace {

namespace fs = std::filesystem;
using train::testing::RecordingReporter;
using train::testing::ToyTask;

struct TempDir {
  fs::path path = fs::temp_directory_path() /
                  ("dp-resume-" + std::to_string(::getpid()) + "-" + std::to_string(std::rand()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

// Sets the stop flag after step `at` (only the reporter of the rank it is given to).
struct StopAfter : RecordingReporter {
  std::atomic<bool>* flag = nullptr;
  int64_t at = -1;
  void step(const train::StepRecord& r) override {
    RecordingReporter::step(r);
    if (r.step == at) flag->store(true);
  }
};

config::ExperimentConfig config_for() {
  config::ExperimentConfig c;
  c.batch.global = 32;
  c.batch.micro = 8;
  c.optim.name = "sgd";
  c.optim.base_lr = 0.1;
  c.optim.base_batch = 32;
  c.schedule.epochs = 2.0;  // 16 steps
  c.train.eval_every = 1.0;
  c.data.eval_train_samples = 64;
  return c;
}

train::TrainerOptions options(const std::string& dir, const std::atomic<bool>* stop) {
  train::TrainerOptions o;
  o.run_id = "00000000deadbeef";
  o.stop_requested = stop;
  if (!dir.empty()) o.checkpoints = std::make_shared<train::CheckpointStore>(dir);
  return o;
}

// Two ranks; rank `stopper` alone sees the stop signal after step `stop_at` (-1: never).
std::vector<torch::Tensor> train_two(const std::string& dir, int64_t stopper, int64_t stop_at,
                                     std::vector<train::RunOutcome>& outcomes) {
  ToyTask tasks[2];
  std::atomic<bool> flags[2] = {false, false};
  outcomes.assign(2, {});
  testing::run_ranks(2, [&](int64_t rank, std::shared_ptr<ProcessGroupDataParallel> dp) {
    auto o = options(dir, &flags[rank]);
    o.data_parallel = dp;
    StopAfter rec;
    rec.flag = &flags[rank];
    rec.at = rank == stopper ? stop_at : -1;
    train::Trainer trainer(config_for(), o, tasks[rank], rec);
    trainer.resume();
    outcomes[static_cast<size_t>(rank)] = trainer.run();
  });
  std::vector<torch::Tensor> out;
  for (auto& p : tasks[0].named_parameters()) out.push_back(p.tensor.detach().clone());
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_TRUE(torch::equal(out[i], tasks[1].named_parameters()[i].tensor.detach()));
  }
  return out;
}

TEST(DataParallelResume, AStopSeenByOneRankStopsBothAndResumeMatchesAnUninterruptedRun) {
  TempDir dir;
  std::vector<train::RunOutcome> outcomes;
  const auto reference = train_two("", -1, -1, outcomes);
  EXPECT_EQ(outcomes[0].last_step, 16);

  const auto ckpt = (dir.path / "ckpt").string();
  train_two(ckpt, /*stopper=*/1, /*stop_at=*/5, outcomes);
  // Rank 1 saw the signal during step 5; the ranks agreed on it at step 6's all-reduce.
  EXPECT_EQ(outcomes[0].status, train::RunStatus::preempted);
  EXPECT_EQ(outcomes[1].status, train::RunStatus::preempted);
  EXPECT_EQ(outcomes[0].last_step, outcomes[1].last_step);
  EXPECT_EQ(outcomes[0].last_step, 7);
  EXPECT_TRUE(fs::exists(fs::path(ckpt) / "ckpt-000000000007.pt"));
  EXPECT_TRUE(fs::exists(fs::path(ckpt) / "rank1-000000000007.pt"));

  const auto resumed = train_two(ckpt, -1, -1, outcomes);
  EXPECT_EQ(outcomes[0].status, train::RunStatus::done);
  EXPECT_EQ(outcomes[0].last_step, 16);
  for (size_t i = 0; i < reference.size(); ++i) {
    EXPECT_TRUE(torch::allclose(resumed[i], reference[i], 1e-6, 1e-7)) << "parameter " << i;
  }
}

}  // namespace
}  // namespace batchlab::dist
