#include "core/train/autocast.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/train/evaluator.h"
#include "core/train/trainer.h"
#include "tests/core/train/toy_task.h"

namespace batchlab::train {
namespace {

TEST(Autocast, Bf16GuardRunsMatrixProductsInBf16AndRestoresTheState) {
  auto a = torch::randn({4, 8}), b = torch::randn({8, 3});
  const auto mp = mixed_precision("bf16", c10::DeviceType::CPU);
  EXPECT_TRUE(mp.bf16);
  {
    AutocastGuard guard(mp);
    EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kBFloat16);
    {
      AutocastGuard nested(mp);  // nesting keeps it on
      EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kBFloat16);
    }
    EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kBFloat16);
  }
  EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kFloat32);
}

TEST(Autocast, Fp32IsANoOp) {
  const auto mp = mixed_precision("fp32", c10::DeviceType::CPU);
  EXPECT_FALSE(mp.bf16);
  AutocastGuard guard(mp);
  EXPECT_EQ(torch::mm(torch::randn({2, 2}), torch::randn({2, 2})).scalar_type(), torch::kFloat32);
}

TEST(Autocast, Bf16TrainingKeepsFp32WeightsAndGradientsCloseToFp32) {
  testing::ToyTask fp32, bf16;  // same seed: same weights and data
  auto idx = torch::arange(64, torch::kInt64);
  AccumulationHooks hooks;
  hooks.precision = mixed_precision("bf16", c10::DeviceType::CPU);
  auto exact = accumulate_gradients(fp32, {idx}, std::nullopt);
  auto mixed = accumulate_gradients(bf16, {idx}, std::nullopt, nullptr, nullptr, &hooks);
  EXPECT_NEAR(mixed.mean_loss.item<double>(), exact.loss, 0.02 * exact.loss);
  auto p32 = fp32.named_parameters(), p16 = bf16.named_parameters();
  for (size_t i = 0; i < p32.size(); ++i) {
    EXPECT_EQ(p16[i].tensor.scalar_type(), torch::kFloat32);
    EXPECT_EQ(p16[i].tensor.grad().scalar_type(), torch::kFloat32);
    const auto& g = p32[i].tensor.grad();
    const double rel = (p16[i].tensor.grad() - g).norm().item<double>() / g.norm().item<double>();
    EXPECT_LT(rel, 0.05) << p32[i].name;  // bf16 keeps ~3 significant digits
    EXPECT_GT(rel, 0.0) << p32[i].name;   // ...and it did run in bf16
  }
  // Evaluation under the same autocast.
  auto m = evaluate(bf16, Split::test, torch::arange(64, torch::kInt64), 32, hooks.precision);
  EXPECT_EQ(m.items, 64);
}

}  // namespace
}  // namespace batchlab::train
