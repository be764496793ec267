#include "core/train/checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/config/experiment_config.h"
#include "core/errors.h"
#include "core/train/trainer.h"
#include "tests/core/train/toy_task.h"
#include "tests/temp_dir.h"

namespace batchlab::train {
namespace {

namespace fs = std::filesystem;
using test_support::TempDir;
using testing::RecordingReporter;
using testing::ToyTask;

struct Setup {
  config::ExperimentConfig config;
  TrainerOptions options;
};

Setup setup(std::shared_ptr<CheckpointStore> store, int64_t every) {
  Setup s;
  auto& c = s.config;
  c.batch.global = 32;
  c.batch.micro = 16;
  c.optim.name = "sgd";
  c.optim.base_lr = 0.1;
  c.optim.base_batch = 32;
  c.optim.weight_decay = 1e-4;
  c.schedule.epochs = 3.0;
  c.schedule.warmup_steps = 5;
  c.schedule.decay = "cosine";
  c.train.eval_every = 1.0;
  c.train.checkpoint_every = every;
  c.data.eval_train_samples = 64;
  s.options.run_id = "0123456789abcdef";
  s.options.checkpoints = std::move(store);
  return s;
}

std::vector<torch::Tensor> weights(Task& t) {
  std::vector<torch::Tensor> out;
  for (auto& p : t.named_parameters()) out.push_back(p.tensor.detach().clone());
  return out;
}

// Stops the run after a given step, as a signal handler would.
struct StopAfter : RecordingReporter {
  std::atomic<bool>* flag = nullptr;
  int64_t at = 0;
  void step(const StepRecord& r) override {
    RecordingReporter::step(r);
    if (r.step == at) flag->store(true);
  }
};

TEST(Checkpoint, ResumedRunEndsWithTheSameWeightsAndContinuesTheSeries) {
  // Uninterrupted reference: 3 epochs of 8 steps.
  ToyTask ref_task;
  RecordingReporter ref_rec;
  const auto plain = setup(nullptr, 0);
  Trainer ref(plain.config, plain.options, ref_task, ref_rec);
  ref.run();

  TempDir dir;
  auto store = std::make_shared<CheckpointStore>(dir.path.string());
  std::atomic<bool> stop{false};
  {
    // Checkpoints every 4 steps; stopped after step index 9 (10 updates): the stop writes one
    // at 10.
    ToyTask task;
    StopAfter stopper;
    stopper.flag = &stop;
    stopper.at = 9;
    auto s = setup(store, 4);
    s.options.stop_requested = &stop;
    Trainer t(s.config, s.options, task, stopper);
    auto outcome = t.run();
    EXPECT_EQ(outcome.status, RunStatus::preempted);
    EXPECT_EQ(outcome.last_step, 10);
  }
  auto files = store->list();
  ASSERT_EQ(files.size(), 2u);  // steps 10 and 8: only the two newest are kept
  fs::remove(files[0]);         // as if killed with SIGKILL after step 10: resume from 8

  ToyTask resumed_task;
  RecordingReporter resumed_rec;
  const auto again = setup(store, 4);
  Trainer resumed(again.config, again.options, resumed_task, resumed_rec);
  EXPECT_EQ(resumed.resume(), 8);
  auto outcome = resumed.run();
  EXPECT_EQ(outcome.status, RunStatus::done);
  EXPECT_EQ(outcome.last_step, 24);
  ASSERT_FALSE(resumed_rec.steps.empty());
  EXPECT_EQ(resumed_rec.steps.front().step, 8);  // continues; does not replay 0..7
  EXPECT_EQ(resumed_rec.steps.size(), 16u);

  auto a = weights(ref_task), b = weights(resumed_task);
  ASSERT_FALSE(a.empty());
  ASSERT_EQ(a.size(), b.size());  // else the loop below would compare a prefix, or read past b
  for (size_t i = 0; i < a.size(); ++i) {
    const double rel = (a[i] - b[i]).abs().max().item<double>() / a[i].abs().max().item<double>();
    EXPECT_LT(rel, 1e-6) << "parameter " << i;
  }
  // Same schedule, same data order: the last step's LR and loss equal the uninterrupted run's.
  EXPECT_DOUBLE_EQ(resumed_rec.steps.back().lr, ref_rec.steps.back().lr);
  EXPECT_NEAR(resumed_rec.steps.back().train_loss, ref_rec.steps.back().train_loss, 1e-6);
  // The training clock carried over: the resumed run's clock starts where the checkpoint left it.
  EXPECT_GT(resumed_rec.steps.front().wall_s, 0.0);
}

TEST(Checkpoint, CorruptNewestFallsBackWithAWarning) {
  TempDir dir;
  CheckpointStore store(dir.path.string());
  ToyTask task;
  config::OptimConfig oc;
  auto opt = optim::make_optimizer(oc, task.named_parameters(), 0.1);
  CheckpointContents c{"0123456789abcdef", {}};
  c.state.step = 4;
  c.state.train_s = 1.5;
  const auto w4 = weights(task);
  store.save(c, task.model(), opt->optimizer());
  {
    torch::NoGradGuard g;
    for (auto& p : task.named_parameters()) p.tensor.add_(1.0);
  }
  c.state.step = 8;
  const auto newest = store.save(c, task.model(), opt->optimizer());
  {  // flip the bits of one byte in the payload of the newest
    std::fstream f(newest, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(100);
    const char byte = static_cast<char>(f.get());
    f.seekp(100);
    f.put(static_cast<char>(~byte));
  }
  std::vector<std::string> warnings;
  ToyTask fresh(256, 128, 99);
  auto fresh_opt = optim::make_optimizer(oc, fresh.named_parameters(), 0.1);
  auto loaded =
      store.load_latest("0123456789abcdef", fresh.model(), fresh_opt->optimizer(), warnings);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->state.step, 4);
  EXPECT_DOUBLE_EQ(loaded->state.train_s, 1.5);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("checksum"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find(newest), std::string::npos);
  EXPECT_NE(warnings[0].find("; falling back to ckpt-000000000004.pt"), std::string::npos)
      << warnings[0];
  auto got = weights(fresh);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(torch::equal(got[i], w4[i]));
}

TEST(Checkpoint, AnotherConfigurationIsRefused) {
  TempDir dir;
  CheckpointStore store(dir.path.string());
  ToyTask task;
  config::OptimConfig oc;
  auto opt = optim::make_optimizer(oc, task.named_parameters(), 0.1);
  store.save({"aaaaaaaaaaaaaaaa", {}}, task.model(), opt->optimizer());
  std::vector<std::string> warnings;
  try {
    store.load_latest("bbbbbbbbbbbbbbbb", task.model(), opt->optimizer(), warnings);
    FAIL() << "expected CheckpointError";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("aaaaaaaaaaaaaaaa"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("bbbbbbbbbbbbbbbb"), std::string::npos);
  }
}

TEST(Checkpoint, TruncatedFileIsNamed) {
  TempDir dir;
  CheckpointStore store(dir.path.string());
  ToyTask task;
  config::OptimConfig oc;
  auto opt = optim::make_optimizer(oc, task.named_parameters(), 0.1);
  const auto path = store.save({"aaaaaaaaaaaaaaaa", {}}, task.model(), opt->optimizer());
  fs::resize_file(path, fs::file_size(path) / 2);
  std::vector<std::string> warnings;
  auto loaded = store.load_latest("aaaaaaaaaaaaaaaa", task.model(), opt->optimizer(), warnings);
  EXPECT_FALSE(loaded.has_value());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("truncated"), std::string::npos) << warnings[0];
  // The only (oldest) checkpoint has nothing to fall back to.
  EXPECT_EQ(warnings[0].find("falling back"), std::string::npos) << warnings[0];
}

// No checkpoint readable: the trainer starts over from step 0, says so, and tells why for the
// run's record (Trainer::started_over); with no checkpoint at all there is nothing to tell.
TEST(Checkpoint, NoReadableCheckpointStartsOverSayingWhy) {
  TempDir dir;
  auto store = std::make_shared<CheckpointStore>(dir.path.string());
  {
    ToyTask task;
    RecordingReporter rec;
    const auto first = setup(store, 4);
    Trainer t(first.config, first.options, task, rec);
    EXPECT_EQ(t.resume(), 0);
    EXPECT_FALSE(t.started_over().has_value());
    t.run();
  }
  const auto files = store->list();
  ASSERT_EQ(files.size(), 2u);
  for (const auto& f : files) fs::resize_file(f, 64);
  ToyTask task;
  RecordingReporter rec;
  const auto again = setup(store, 4);
  Trainer t(again.config, again.options, task, rec);
  EXPECT_EQ(t.resume(), 0);
  ASSERT_EQ(rec.notes.size(), 3u);
  EXPECT_EQ(rec.notes[2], "no checkpoint of this run could be read (2 files in " +
                              dir.path.string() +
                              ", all unreadable): the run starts over from step 0");
  ASSERT_TRUE(t.started_over().has_value());
  EXPECT_EQ(t.started_over()->rfind(rec.notes[2] + "; " + files[0], 0), 0u) << *t.started_over();
  EXPECT_NE(t.started_over()->find(files[1]), std::string::npos) << *t.started_over();
}

// A Slurm task's records lag its checkpoints (records are published from node-local disk): a node
// lost after a checkpoint and before the next publication must not leave steps unrecorded.
TEST(Checkpoint, NoCheckpointPastTheRecordsEndIsResumedFrom) {
  TempDir dir;
  CheckpointStore store(dir.path.string());
  ToyTask task;
  config::OptimConfig oc;
  auto opt = optim::make_optimizer(oc, task.named_parameters(), 0.1);
  CheckpointContents c{"aaaaaaaaaaaaaaaa", {}};
  c.state.step = 4;
  store.save(c, task.model(), opt->optimizer());
  c.state.step = 8;
  store.save(c, task.model(), opt->optimizer());
  std::vector<std::string> warnings;
  auto loaded =
      store.load_latest("aaaaaaaaaaaaaaaa", task.model(), opt->optimizer(), warnings, int64_t{6});
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->state.step, 4);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("records end at step 6"), std::string::npos) << warnings[0];

  warnings.clear();
  EXPECT_FALSE(
      store.load_latest("aaaaaaaaaaaaaaaa", task.model(), opt->optimizer(), warnings, int64_t{0}))
      << "no records at all: the run starts over";
  EXPECT_EQ(warnings.size(), 2u);
  warnings.clear();
  loaded = store.load_latest("aaaaaaaaaaaaaaaa", task.model(), opt->optimizer(), warnings);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->state.step, 8) << "no limit given: the newest";
}

}  // namespace
}  // namespace batchlab::train
