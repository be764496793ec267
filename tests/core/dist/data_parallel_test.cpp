// Acceptance 1 of the data-parallelism issue: 2 Gloo ranks with micro-batch b and accumulation k
// train exactly like 1 process with micro-batch 2b and accumulation k, through the real Trainer,
// for SGD and LAMB, and for a ghost-batch-norm network whose groups are b examples (the rank
// layout of data_order.h makes the ranks' j-th micro-batches the single process's j-th one).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/config/experiment_config.h"
#include "core/train/trainer.h"
#include "models/ghost_batch_norm.h"
#include "tests/core/dist/dist_test_util.h"
#include "tests/core/train/toy_task.h"

namespace batchlab::dist {
namespace {

using train::testing::RecordingReporter;
using train::testing::ToyTask;

// A convolution (no bias: batch norm follows, as in ResNets), a ghost batch norm over groups of
// `group` samples, ReLU, average pooling and a linear layer, on random 8x8 images with labels from
// their mean brightness per quadrant.
struct GhostNet : torch::nn::Module {
  explicit GhostNet(int64_t group)
      : conv(register_module(
            "conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 4, 3).padding(1).bias(false)))),
        bn(register_module("bn",
                           models::GhostBatchNorm2d(models::GhostBatchNormOptions{4, group}))),
        fc(register_module("fc", torch::nn::Linear(4 * 4, 4))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    auto h = torch::relu(bn(conv(x)));                            // [B, 4, 8, 8]
    return fc(torch::adaptive_avg_pool2d(h, {2, 2}).flatten(1));  // [B, 4]
  }
  torch::nn::Conv2d conv;
  models::GhostBatchNorm2d bn;
  torch::nn::Linear fc;
};

class GhostTask : public train::Task {
 public:
  explicit GhostTask(int64_t group)
      : net_((torch::manual_seed(11), std::make_shared<GhostNet>(group))) {
    x_ = torch::randn({256, 1, 8, 8});
    y_ = torch::randint(0, 4, {256}, torch::kInt64);
  }
  torch::nn::Module& model() override { return *net_; }
  int64_t size(train::Split s) const override {
    return s == train::Split::train ? 256 : s == train::Split::test ? 64 : 0;
  }
  train::Batch make_batch(train::Split, const torch::Tensor& idx,
                          std::optional<uint64_t>) override {
    return {x_.index_select(0, idx), y_.index_select(0, idx), idx.size(0), {}};
  }
  train::BatchOutput forward(const train::Batch& b) override {
    auto logits = net_->forward(b.inputs);
    return {torch::nn::functional::cross_entropy(logits, b.targets),
            logits.argmax(1).eq(b.targets).sum(), b.size};
  }

 private:
  std::shared_ptr<GhostNet> net_;
  torch::Tensor x_, y_;
};

struct Setup {
  config::ExperimentConfig config;
  train::TrainerOptions options;
};

Setup options_for(const std::string& optimizer, int64_t micro) {
  Setup s;
  auto& c = s.config;
  c.batch.global = 64;
  c.batch.micro = micro;
  c.optim.name = optimizer;
  c.optim.base_lr = optimizer == "lamb" ? 0.01 : 0.05;
  c.optim.base_batch = 64;
  c.optim.weight_decay = 1e-3;
  c.optim.eps = optimizer == "lamb" ? 1e-6 : 1e-8;
  c.optim.grad_clip = optimizer == "lamb" ? 1.0 : 0.0;
  c.schedule.steps = 6;
  c.train.eval_every = 100.0;  // evaluate only at the end
  c.train.divergence = 0.0;
  c.data.eval_train_samples = 64;
  s.options.eval_chunk = 40;
  return s;
}

double max_relative_difference(const torch::Tensor& a, const torch::Tensor& b) {
  auto denom = torch::maximum(a.abs().max(), b.abs().max()).item<double>();
  return (a - b).abs().max().item<double>() / std::max(denom, 1e-30);
}

struct Trained {
  std::vector<torch::Tensor> params;
  RecordingReporter records;
};

template <class MakeTask>
Trained single_process(const std::string& optimizer, int64_t micro, MakeTask make) {
  auto task = make();
  Trained out;
  const auto s = options_for(optimizer, micro);
  train::Trainer trainer(s.config, s.options, *task, out.records);
  trainer.run();
  for (const auto& p : task->named_parameters()) out.params.push_back(p.tensor.detach().clone());
  return out;
}

// Two ranks, each with micro `micro`; returns rank 0's result (and checks rank 1 ends identical).
// Tasks are built before the rank threads start: their constructors seed the global generator.
template <class MakeTask>
Trained two_ranks(const std::string& optimizer, int64_t micro, MakeTask make, double bucket_mb) {
  std::vector<Trained> out(2);
  std::vector<decltype(make())> tasks;
  tasks.push_back(make());
  tasks.push_back(make());
  testing::run_ranks(2, [&](int64_t rank, std::shared_ptr<ProcessGroupDataParallel> dp) {
    auto& task = tasks[static_cast<size_t>(rank)];
    auto s = options_for(optimizer, micro);
    s.options.data_parallel = dp;
    s.config.train.bucket_mb = bucket_mb;
    auto& mine = out[static_cast<size_t>(rank)];
    train::Trainer trainer(s.config, s.options, *task, mine.records);
    trainer.run();
    for (const auto& p : task->named_parameters()) mine.params.push_back(p.tensor.detach().clone());
  });
  for (size_t i = 0; i < out[0].params.size(); ++i) {
    EXPECT_TRUE(torch::equal(out[0].params[i], out[1].params[i]))
        << "ranks differ at parameter " << i;
  }
  return std::move(out[0]);
}

void expect_same_training(const Trained& one, const Trained& two, const std::string& what) {
  ASSERT_EQ(one.params.size(), two.params.size());
  for (size_t i = 0; i < one.params.size(); ++i) {
    EXPECT_LT(max_relative_difference(one.params[i], two.params[i]), 1e-5)
        << what << " parameter " << i;
  }
  ASSERT_EQ(one.records.steps.size(), 6u);
  ASSERT_EQ(two.records.steps.size(), 6u);
  for (size_t s = 0; s < 6; ++s) {
    // The recorded loss is the mean over the whole global batch, not over rank 0's share.
    EXPECT_NEAR(one.records.steps[s].train_loss, two.records.steps[s].train_loss,
                1e-5 * one.records.steps[s].train_loss)
        << what << " step " << s;
    EXPECT_NEAR(one.records.steps[s].grad_norm, two.records.steps[s].grad_norm,
                1e-5 * one.records.steps[s].grad_norm)
        << what << " step " << s;
  }
  EXPECT_EQ(two.records.geometry.batch.world, 2);
  EXPECT_EQ(two.records.geometry.batch.global, one.records.geometry.batch.global);
  EXPECT_EQ(two.records.geometry.batch.accum, one.records.geometry.batch.accum);
}

TEST(DataParallel, TwoGlooRanksMatchOneProcessWithTwiceTheMicroBatch) {
  for (const std::string optimizer : {"sgd", "lamb"}) {
    auto make = [] { return std::make_unique<ToyTask>(); };
    // 1 process: micro 32 x accumulation 2; 2 ranks: micro 16 x accumulation 2.
    auto one = single_process(optimizer, 32, make);
    auto two = two_ranks(optimizer, 16, make, 25.0);
    EXPECT_EQ(one.records.geometry.batch.accum, 2);
    expect_same_training(one, two, optimizer);
    // Sharded evaluation over both ranks gives the metrics of the whole sets.
    ASSERT_EQ(one.records.evals.size(), 1u);
    ASSERT_EQ(two.records.evals.size(), 1u);
    EXPECT_NEAR(one.records.evals[0].test_acc.value(), two.records.evals[0].test_acc.value(),
                1e-12);
    EXPECT_NEAR(one.records.evals[0].test_loss.value(), two.records.evals[0].test_loss.value(),
                1e-5);
    EXPECT_NEAR(one.records.evals[0].train_acc.value(), two.records.evals[0].train_acc.value(),
                1e-12);
  }
}

TEST(DataParallel, ManySmallBucketsGiveTheSameResult) {
  // 1e-4 MiB (~100 bytes): a bucket per parameter, launched while backward still runs.
  auto make = [] { return std::make_unique<ToyTask>(); };
  expect_same_training(single_process("sgd", 32, make), two_ranks("sgd", 16, make, 1e-4),
                       "small buckets");
}

TEST(DataParallel, GhostBatchNormRanksMatchOneProcess) {
  // Groups of 8: each rank's micro-batch of 8 is one group, the single process's micro-batch of 16
  // holds the same two groups.
  for (const std::string optimizer : {"sgd", "lamb"}) {
    auto make = [] { return std::make_unique<GhostTask>(8); };
    auto one = single_process(optimizer, 16, make);
    auto two = two_ranks(optimizer, 8, make, 25.0);
    EXPECT_EQ(one.records.geometry.batch.accum, 4);
    expect_same_training(one, two, "ghost bn " + optimizer);
  }
}

TEST(DataParallel, RanksStartFromRankZerosWeights) {
  // Differently initialized models: after the start-up broadcast both hold rank 0's weights.
  ToyTask tasks[2] = {ToyTask(256, 128, 100), ToyTask(256, 128, 101)};
  ToyTask reference(256, 128, 100);
  testing::run_ranks(2, [&](int64_t rank, std::shared_ptr<ProcessGroupDataParallel> dp) {
    auto& task = tasks[rank];
    auto s = options_for("sgd", 16);
    s.config.schedule.steps = 1;
    // Warmup from 0: the one update has LR 0, so the weights after run() are the starting ones.
    s.config.schedule.warmup_steps = 1;
    s.config.schedule.warmup_start = 0.0;
    s.options.data_parallel = dp;
    RecordingReporter records;
    train::Trainer trainer(s.config, s.options, task, records);
    trainer.run();
  });
  auto expected = reference.named_parameters();
  for (auto& task : tasks) {
    auto mine = task.named_parameters();
    for (size_t i = 0; i < mine.size(); ++i) {
      EXPECT_TRUE(torch::equal(mine[i].tensor.detach(), expected[i].tensor.detach()))
          << mine[i].name;
    }
  }
}

TEST(DataParallel, NoiseScaleUsesEachRanksGradientAgainstTheAveragedOne) {
  std::vector<std::vector<train::NoiseRecord>> noise(2);
  struct NoiseRecorder : RecordingReporter {
    std::vector<train::NoiseRecord>* out = nullptr;
    void noise_scale(const train::NoiseRecord& r) override { out->push_back(r); }
  };
  ToyTask tasks[2];
  testing::run_ranks(2, [&](int64_t rank, std::shared_ptr<ProcessGroupDataParallel> dp) {
    auto& task = tasks[rank];
    auto s = options_for("sgd", 32);  // accumulation 1: only the data-parallel estimate applies
    s.config.train.noise_scale = true;
    s.options.data_parallel = dp;
    NoiseRecorder rec;
    rec.out = &noise[static_cast<size_t>(rank)];
    train::Trainer trainer(s.config, s.options, task, rec);
    trainer.run();
  });
  ASSERT_EQ(noise[0].size(), 6u);
  for (size_t i = 0; i < noise[0].size(); ++i) {
    EXPECT_EQ(noise[0][i].b_small, 32);  // one rank's share: micro x accumulation
    EXPECT_EQ(noise[0][i].b_big, 64);    // the global batch
    EXPECT_TRUE(std::isfinite(noise[0][i].g2));
    EXPECT_DOUBLE_EQ(noise[0][i].g2, noise[1][i].g2);  // both ranks agree
  }
  // A separately measured gradient: |G_small|^2 >= |G_big|^2 on average, so tr(Sigma) > 0.
  EXPECT_GT(noise[0].back().trace_sigma, 0.0);
}

}  // namespace
}  // namespace batchlab::dist
