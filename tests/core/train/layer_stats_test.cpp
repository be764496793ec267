// Per-layer rows against hand-computed norms, and the trust ratios against the optimizers' own.
#include "core/train/layer_stats.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "core/optim/factory.h"

namespace batchlab::train {
namespace {

std::vector<optim::NamedParameter> hand_set_params() {
  // weight: [[3, 4]] (norm 5), grad [[0.6, 0.8]] (norm 1); bias: [12] (norm 12), grad [0.5].
  auto w = torch::tensor({{3.0, 4.0}}, torch::kFloat64).requires_grad_(true);
  auto b = torch::tensor({12.0}, torch::kFloat64).requires_grad_(true);
  w.mutable_grad() = torch::tensor({{0.6, 0.8}}, torch::kFloat64);
  b.mutable_grad() = torch::tensor({0.5}, torch::kFloat64);
  return {{"fc.weight", w}, {"fc.bias", b}};
}

TEST(LayerStats, PlainSgdRowsMatchHandComputedNorms) {
  auto params = hand_set_params();
  config::OptimConfig oc;
  oc.name = "sgd";
  oc.momentum = 0.0;
  auto opt = optim::make_optimizer(oc, params, 0.1);
  LayerStatsCollector collector(params);
  collector.before_update();
  opt->step();
  auto rows = collector.after_update(7, opt->last_trust_ratios());
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].layer, "fc.weight");
  EXPECT_EQ(rows[0].step, 7);
  EXPECT_EQ(rows[0].numel, 2);
  EXPECT_NEAR(rows[0].weight_norm, 5.0, 1e-12);
  EXPECT_NEAR(rows[0].grad_norm, 1.0, 1e-12);
  EXPECT_NEAR(rows[0].ratio, 5.0, 1e-12);
  EXPECT_NEAR(rows[0].update_norm, 0.1, 1e-12);  // lr x ||g||
  EXPECT_FALSE(rows[0].trust_ratio.has_value());
  EXPECT_NEAR(rows[1].weight_norm, 12.0, 1e-12);
  EXPECT_NEAR(rows[1].ratio, 24.0, 1e-12);
  EXPECT_NEAR(rows[1].update_norm, 0.05, 1e-12);
}

TEST(LayerStats, LarsTrustRatioMatchesTheOptimizerAndThePaper) {
  auto params = hand_set_params();
  config::OptimConfig oc;
  oc.name = "lars";
  oc.momentum = 0.0;
  oc.weight_decay = 0.01;
  oc.trust_coefficient = 0.001;
  oc.eps = 1e-8;
  auto opt = optim::make_optimizer(oc, params, 0.1);
  LayerStatsCollector collector(params);
  collector.before_update();
  opt->step();
  const auto ratios = opt->last_trust_ratios();
  auto rows = collector.after_update(0, ratios);
  ASSERT_TRUE(rows[0].trust_ratio.has_value());
  // eta ||w|| / (||g|| + wd ||w|| + eps) = 0.001 * 5 / (1 + 0.05 + 1e-8)
  EXPECT_NEAR(*rows[0].trust_ratio, 0.005 / (1.05 + 1e-8), 1e-12);
  EXPECT_NEAR(*rows[0].trust_ratio, ratios[0].item<double>(), 1e-15);
  // The bias is 1-D: excluded from adaptation by default, so no trust ratio.
  EXPECT_FALSE(rows[1].trust_ratio.has_value());
}

TEST(LayerStats, LambTrustRatioMatchesTheOptimizer) {
  auto params = hand_set_params();
  // Small gradients so LAMB's global clipping (norm 1) does not act.
  params[0].tensor.mutable_grad() = torch::tensor({{0.06, 0.08}}, torch::kFloat64);
  params[1].tensor.mutable_grad() = torch::tensor({0.05}, torch::kFloat64);
  config::OptimConfig oc;
  oc.name = "lamb";
  oc.weight_decay = 0.01;
  oc.eps = 1e-6;
  oc.grad_clip = 1.0;
  auto opt = optim::make_optimizer(oc, params, 0.01);
  LayerStatsCollector collector(params);
  collector.before_update();
  opt->step();
  const auto ratios = opt->last_trust_ratios();
  auto rows = collector.after_update(0, ratios);
  ASSERT_TRUE(rows[0].trust_ratio.has_value());
  EXPECT_NEAR(*rows[0].trust_ratio, ratios[0].item<double>(), 1e-15);
  // First step with bias correction: m_hat = g, v_hat = g^2, r = g/(|g| + eps) + wd w.
  auto w = torch::tensor({3.0, 4.0}, torch::kFloat64),
       g = torch::tensor({0.06, 0.08}, torch::kFloat64);
  auto r = g / (g.abs() + 1e-6) + 0.01 * w;
  EXPECT_NEAR(*rows[0].trust_ratio, 5.0 / r.norm().item<double>(), 1e-9);
}

}  // namespace
}  // namespace batchlab::train
