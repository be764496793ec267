#include "models/ghost_batch_norm.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/errors.h"

namespace batchlab::models {
namespace {

TEST(GhostBatchNorm, GroupsOf32InOneBatchEqualEightSeparateBatches) {
  torch::manual_seed(0);
  auto x = torch::randn({256, 4, 5, 5}) * 3 + 1;
  GhostBatchNorm2d ghost(GhostBatchNormOptions{4, 32});
  torch::nn::BatchNorm2d plain(torch::nn::BatchNorm2dOptions(4));
  {
    torch::NoGradGuard g;
    auto gamma = torch::rand({4}) + 0.5, beta = torch::randn({4});
    ghost->weight.copy_(gamma);
    ghost->bias.copy_(beta);
    plain->weight.copy_(gamma);
    plain->bias.copy_(beta);
  }
  ghost->train();
  plain->train();
  auto y = ghost->forward(x);
  std::vector<torch::Tensor> parts;
  for (int64_t i = 0; i < 8; ++i) parts.push_back(plain->forward(x.slice(0, 32 * i, 32 * (i + 1))));
  auto expected = torch::cat(parts);
  EXPECT_TRUE(torch::allclose(y, expected, 1e-5, 1e-5)) << (y - expected).abs().max().item<float>();
  // Running statistics as after eight separate forward passes.
  EXPECT_TRUE(torch::allclose(ghost->running_mean, plain->running_mean, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(ghost->running_var, plain->running_var, 1e-5, 1e-6));
  EXPECT_EQ(ghost->num_batches_tracked.item<int64_t>(), 8);
  // And not the same as one batch norm over all 256 (the test can tell the difference).
  torch::nn::BatchNorm2d whole(torch::nn::BatchNorm2dOptions(4));
  {
    torch::NoGradGuard g;
    whole->weight.copy_(plain->weight);
    whole->bias.copy_(plain->bias);
  }
  EXPECT_FALSE(torch::allclose(y, whole->forward(x), 1e-5, 1e-5));
}

TEST(GhostBatchNorm, GradientsMatchSeparateGroups) {
  torch::manual_seed(1);
  auto x1 = torch::randn({64, 3, 4, 4}).requires_grad_(true);
  auto x2 = x1.detach().clone().requires_grad_(true);
  GhostBatchNorm2d ghost(GhostBatchNormOptions{3, 16});
  torch::nn::BatchNorm2d plain(torch::nn::BatchNorm2dOptions(3));
  auto w = torch::randn({64, 3, 4, 4});
  (ghost->forward(x1) * w).sum().backward();
  torch::Tensor loss = torch::zeros({});
  for (int64_t i = 0; i < 4; ++i)
    loss = loss +
           (plain->forward(x2.slice(0, 16 * i, 16 * (i + 1))) * w.slice(0, 16 * i, 16 * (i + 1)))
               .sum();
  loss.backward();
  EXPECT_TRUE(torch::allclose(x1.grad(), x2.grad(), 1e-4, 1e-5));
  EXPECT_TRUE(torch::allclose(ghost->weight.grad(), plain->weight.grad(), 1e-4, 1e-4));
}

TEST(GhostBatchNorm, ZeroGroupAndEvalModeAreOrdinaryBatchNorm) {
  torch::manual_seed(2);
  auto x = torch::randn({48, 2, 3, 3});
  GhostBatchNorm2d ghost(GhostBatchNormOptions{2, 0});
  torch::nn::BatchNorm2d plain(torch::nn::BatchNorm2dOptions(2));
  EXPECT_TRUE(torch::allclose(ghost->forward(x), plain->forward(x), 1e-5, 1e-6));
  ghost->eval();
  plain->eval();
  EXPECT_TRUE(torch::allclose(ghost->forward(x), plain->forward(x), 1e-5, 1e-6));
}

TEST(GhostBatchNorm, GroupThatDoesNotDivideTheBatchIsAnInputError) {
  GhostBatchNorm2d ghost(GhostBatchNormOptions{2, 32});
  EXPECT_THROW(ghost->forward(torch::randn({80, 2, 3, 3})), InputError);
}

TEST(GhostBatchNorm, StateDictNamesMatchBatchNorm2d) {
  GhostBatchNorm2d ghost(GhostBatchNormOptions{2, 4});
  torch::nn::BatchNorm2d plain(torch::nn::BatchNorm2dOptions(2));
  std::vector<std::string> a, b;
  for (const auto& p : ghost->named_parameters()) a.push_back(p.key());
  for (const auto& p : ghost->named_buffers()) a.push_back(p.key());
  for (const auto& p : plain->named_parameters()) b.push_back(p.key());
  for (const auto& p : plain->named_buffers()) b.push_back(p.key());
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace batchlab::models

#include "models/registry.h"

namespace batchlab::models {
namespace {

TEST(GhostBatchNorm, EveryBatchNormOfTheModelIsGhostWhenBnGroupIsSet) {
  config::ModelConfig cfg;
  cfg.width = 8;
  torch::manual_seed(3);
  auto net = make_image_classifier(cfg, 1, 28, 28, 10, /*bn_group=*/32);
  net->train();
  auto x = torch::randn({256, 1, 28, 28});
  auto whole = net->forward(x);
  std::vector<torch::Tensor> parts;
  for (int64_t i = 0; i < 8; ++i) parts.push_back(net->forward(x.slice(0, 32 * i, 32 * (i + 1))));
  EXPECT_TRUE(torch::allclose(whole, torch::cat(parts), 1e-4, 1e-5));
  // Without ghost groups the whole-batch output differs from the per-32 one.
  torch::manual_seed(3);
  auto plain = make_image_classifier(cfg, 1, 28, 28, 10, /*bn_group=*/0);
  plain->train();
  EXPECT_FALSE(torch::allclose(plain->forward(x), torch::cat(parts), 1e-4, 1e-5));
}

}  // namespace
}  // namespace batchlab::models
