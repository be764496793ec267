// k accumulated micro-batches must give the same gradients, and the same weights after the update,
// as one k-times batch (DESIGN.md "Large-batch mechanics").
#include <gtest/gtest.h>

#include "core/config/experiment_config.h"
#include "core/train/trainer.h"
#include "tests/core/train/toy_task.h"

namespace batchlab::train {
namespace {

using testing::RecordingReporter;
using testing::ToyTask;

double max_relative_difference(const torch::Tensor& a, const torch::Tensor& b) {
  auto denom = torch::maximum(a.abs().max(), b.abs().max()).item<double>();
  return (a - b).abs().max().item<double>() / std::max(denom, 1e-30);
}

std::vector<torch::Tensor> grads_of(Task& task) {
  std::vector<torch::Tensor> out;
  for (auto& p : task.named_parameters()) out.push_back(p.tensor.grad().clone());
  return out;
}

TEST(Accumulation, MicroBatchGradientsEqualOneLargeBatch) {
  ToyTask whole, split;  // same seed: identical weights and data
  auto idx = torch::arange(64, torch::kInt64);

  auto one = accumulate_gradients(whole, {idx}, std::nullopt);
  std::vector<torch::Tensor> micro;
  for (int j = 0; j < 4; ++j) micro.push_back(idx.slice(0, 16 * j, 16 * (j + 1)));
  auto four = accumulate_gradients(split, micro, std::nullopt);

  EXPECT_NEAR(one.loss, four.loss, 1e-5 * std::abs(one.loss));
  EXPECT_EQ(one.items, 64);
  EXPECT_EQ(four.items, 64);
  auto g1 = grads_of(whole), g4 = grads_of(split);
  ASSERT_EQ(g1.size(), g4.size());
  for (size_t i = 0; i < g1.size(); ++i) {
    EXPECT_LT(max_relative_difference(g1[i], g4[i]), 1e-5) << "parameter " << i;
  }
}

config::ExperimentConfig config_for(int64_t global, int64_t micro, const std::string& optimizer) {
  config::ExperimentConfig c;
  c.batch.global = global;
  c.batch.micro = micro;
  c.optim.name = optimizer;
  c.optim.base_lr = 0.05;
  c.optim.base_batch = global;
  c.optim.weight_decay = 1e-4;
  c.optim.eps = 1e-8;
  c.schedule.steps = 3;
  c.train.eval_every = 100.0;  // evaluate only at the end
  c.train.divergence = 0.0;
  c.data.eval_train_samples = 64;
  return c;
}

TEST(Accumulation, TrainerWeightsAfterStepsMatchSingleBatch) {
  for (const std::string optimizer : {"sgd", "adamw"}) {
    ToyTask a, b, init;  // same seed: `init` keeps the weights both runs start from
    RecordingReporter ra, rb;
    Trainer ta(config_for(64, 64, optimizer), {}, a, ra);
    Trainer tb(config_for(64, 8, optimizer), {}, b, rb);
    EXPECT_EQ(ta.geometry().batch.accum, 1);
    EXPECT_EQ(tb.geometry().batch.accum, 8);
    ta.run();
    tb.run();
    auto pa = a.named_parameters(), pb = b.named_parameters(), p0 = init.named_parameters();
    ASSERT_EQ(pa.size(), pb.size());
    ASSERT_EQ(pa.size(), p0.size());
    for (size_t i = 0; i < pa.size(); ++i) {
      EXPECT_LT(max_relative_difference(pa[i].tensor.detach(), pb[i].tensor.detach()), 1e-5)
          << optimizer << " " << pa[i].name;
      // Two runs that never update would match too: both must have moved away from the start,
      // by far more than the tolerance they are compared with.
      EXPECT_GT(max_relative_difference(pa[i].tensor.detach(), p0[i].tensor.detach()), 1e-3)
          << optimizer << " " << pa[i].name << " did not move";
      EXPECT_GT(max_relative_difference(pb[i].tensor.detach(), p0[i].tensor.detach()), 1e-3)
          << optimizer << " " << pb[i].name << " did not move";
    }
    ASSERT_EQ(ra.steps.size(), 3u);
    ASSERT_EQ(rb.steps.size(), 3u);
    for (size_t s = 0; s < 3; ++s) {
      EXPECT_NEAR(ra.steps[s].train_loss, rb.steps[s].train_loss, 1e-5 * ra.steps[s].train_loss);
    }
  }
}

}  // namespace
}  // namespace batchlab::train
