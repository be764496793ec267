// LARS by hand: the two momentum conventions, trust ratio, LARC clipping, Nesterov, zero norms,
// and state round-trips through torch::save / torch::load.
#include "core/optim/lars.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <sstream>
#include <vector>

#include "core/errors.h"
#include "tests/core/optim/optim_test_util.h"

namespace batchlab::optim {
namespace {

using test_util::leaf;

// One scalar parameter w0 = 1, gradient 1 every step, momentum 0.9, no weight decay, no trust ratio
// (adapt off), so d = g = 1 and only the momentum convention differs.
class MomentumForms : public testing::TestWithParam<bool> {
 protected:
  // Runs the given LRs and returns w after each step.
  std::vector<double> run(bool lr_in_momentum, const std::vector<double>& lrs) {
    torch::Tensor w = leaf({1.0});
    Lars opt({w}, LarsOptions(0.0)
                      .momentum(0.9)
                      .adapt(false)
                      .lr_in_momentum(lr_in_momentum)
                      .fused(GetParam()));
    std::vector<double> out;
    for (double lr : lrs) {
      opt.param_groups()[0].options().set_lr(lr);
      w.mutable_grad() = torch::ones({1}, torch::kFloat64);
      opt.step();
      out.push_back(w.item<double>());
    }
    return out;
  }
};

TEST_P(MomentumForms, AgreeWhileTheLearningRateIsConstant) {
  // PyTorch form: buf1 = 1,             w1 = 1 - 0.1 * 1             = 0.9
  //               buf2 = 0.9 * 1 + 1 = 1.9,  w2 = 0.9 - 0.1 * 1.9    = 0.71
  //               buf3 = 0.9 * 1.9 + 1 = 2.71, w3 = 0.71 - 0.1 * 2.71 = 0.439
  // Paper form:   buf1 = 0.1,           w1 = 1 - 0.1                 = 0.9
  //               buf2 = 0.9 * 0.1 + 0.1 = 0.19, w2 = 0.9 - 0.19     = 0.71
  //               buf3 = 0.9 * 0.19 + 0.1 = 0.271, w3 = 0.71 - 0.271 = 0.439
  const std::vector<double> lrs = {0.1, 0.1, 0.1};
  const auto pytorch = run(false, lrs);
  const auto paper = run(true, lrs);
  const std::vector<double> expected = {0.9, 0.71, 0.439};
  for (size_t i = 0; i < lrs.size(); ++i) {
    EXPECT_NEAR(pytorch[i], expected[i], 1e-12) << "step " << i;
    EXPECT_NEAR(paper[i], expected[i], 1e-12) << "step " << i;
  }
}

TEST_P(MomentumForms, DifferWhenTheLearningRateChanges) {
  // LR jumps from 0.1 to 0.5 at the second step (as at the end of a warmup).
  // PyTorch form (LR outside): the whole buffer, including the gradient accumulated at LR 0.1, is
  // applied at the new LR 0.5:
  //   step 1: buf = 1,                 w = 1 - 0.1 * 1        = 0.9
  //   step 2: buf = 0.9 * 1 + 1 = 1.9, w = 0.9 - 0.5 * 1.9    = 0.9 - 0.95  = -0.05
  //   step 3: buf = 0.9 * 1.9 + 1 = 2.71, w = -0.05 - 0.5 * 2.71 = -0.05 - 1.355 = -1.405
  // Paper form (LR inside): the past gradient keeps the LR it was taken with (0.1):
  //   step 1: buf = 0.1 * 1 = 0.1,           w = 1 - 0.1      = 0.9
  //   step 2: buf = 0.9 * 0.1 + 0.5 = 0.59,  w = 0.9 - 0.59   = 0.31
  //   step 3: buf = 0.9 * 0.59 + 0.5 = 1.031, w = 0.31 - 1.031 = -0.721
  // So after an LR increase the PyTorch form takes larger steps (0.95 vs 0.59, 1.355 vs 1.031).
  const std::vector<double> lrs = {0.1, 0.5, 0.5};
  const auto pytorch = run(false, lrs);
  const auto paper = run(true, lrs);
  EXPECT_NEAR(pytorch[0], 0.9, 1e-12);
  EXPECT_NEAR(pytorch[1], -0.05, 1e-12);
  EXPECT_NEAR(pytorch[2], -1.405, 1e-12);
  EXPECT_NEAR(paper[0], 0.9, 1e-12);
  EXPECT_NEAR(paper[1], 0.31, 1e-12);
  EXPECT_NEAR(paper[2], -0.721, 1e-12);

  // A decrease (0.5 -> 0.1, as in decay) goes the other way: the PyTorch form shrinks the old
  // momentum with the LR, the paper form still carries 0.9 * 0.5 from the first step.
  //   PyTorch: w1 = 1 - 0.5 = 0.5;  w2 = 0.5 - 0.1 * 1.9 = 0.31
  //   Paper:   w1 = 0.5;            buf2 = 0.9 * 0.5 + 0.1 = 0.55, w2 = 0.5 - 0.55 = -0.05
  const auto pytorch_down = run(false, {0.5, 0.1});
  const auto paper_down = run(true, {0.5, 0.1});
  EXPECT_NEAR(pytorch_down[1], 0.31, 1e-12);
  EXPECT_NEAR(paper_down[1], -0.05, 1e-12);
}

INSTANTIATE_TEST_SUITE_P(FusedAndAten, MomentumForms, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& i) {
                           return std::string(i.param ? "fused" : "aten");
                         });

class LarsByHand : public testing::TestWithParam<bool> {};

TEST_P(LarsByHand, TrustRatioScalesTheGradient) {
  // w = (3, 4): ||w|| = 5; g = (0.6, 0.8): ||g|| = 1; eta = 0.01, wd = 0, eps = 0
  // ratio = 0.01 * 5 / 1 = 0.05; no momentum: w -= lr * ratio * g = 2 * 0.05 * (0.6, 0.8)
  //       = (3 - 0.06, 4 - 0.08) = (2.94, 3.92), in both conventions.
  for (bool inside : {false, true}) {
    torch::Tensor w = leaf({3.0, 4.0});
    Lars opt({w}, LarsOptions(2.0)
                      .momentum(0.0)
                      .trust_coefficient(0.01)
                      .eps(0.0)
                      .lr_in_momentum(inside)
                      .fused(GetParam()));
    w.mutable_grad() = torch::tensor({0.6, 0.8}, torch::kFloat64);
    opt.step();
    EXPECT_NEAR(w[0].item<double>(), 2.94, 1e-12);
    EXPECT_NEAR(w[1].item<double>(), 3.92, 1e-12);
    ASSERT_NE(opt.param_state(w), nullptr);
    EXPECT_NEAR(opt.param_state(w)->trust_ratio().item<double>(), 0.05, 1e-15);
    EXPECT_EQ(opt.param_state(w)->trust_ratio().dim(), 0);
  }
}

TEST_P(LarsByHand, WeightDecayEntersNormAndDirection) {
  // w = (3, 4), g = (0.6, 0.8), wd = 0.1, eta = 0.01, eps = 0:
  // ratio = 0.01 * 5 / (1 + 0.1 * 5) = 0.05 / 1.5 = 1/30
  // d = (g + 0.1 w) * ratio = (0.9, 1.2) / 30 = (0.03, 0.04); lr 1: w = (2.97, 3.96)
  torch::Tensor w = leaf({3.0, 4.0});
  Lars opt({w},
           LarsOptions(1.0).momentum(0.0).weight_decay(0.1).trust_coefficient(0.01).eps(0.0).fused(
               GetParam()));
  w.mutable_grad() = torch::tensor({0.6, 0.8}, torch::kFloat64);
  opt.step();
  EXPECT_NEAR(w[0].item<double>(), 2.97, 1e-12);
  EXPECT_NEAR(w[1].item<double>(), 3.96, 1e-12);
  EXPECT_NEAR(opt.param_state(w)->trust_ratio().item<double>(), 1.0 / 30.0, 1e-15);
}

TEST_P(LarsByHand, LarcClipCapsTheEffectiveRateAtTheLearningRate) {
  // ratio = 0.05 (as above). lr = 0.02: ratio / lr = 2.5 -> clipped to 1: w -= 0.02 * g
  //   = (3 - 0.012, 4 - 0.016) = (2.988, 3.984)
  // lr = 0.1: ratio / lr = 0.5 (not clipped): w -= 0.1 * 0.5 * g = (2.97, 3.96)
  for (auto [lr, w0, w1, applied] :
       {std::tuple{0.02, 2.988, 3.984, 1.0}, std::tuple{0.1, 2.97, 3.96, 0.5}}) {
    torch::Tensor w = leaf({3.0, 4.0});
    Lars opt({w},
             LarsOptions(lr).momentum(0.0).trust_coefficient(0.01).eps(0.0).trust_clip(true).fused(
                 GetParam()));
    w.mutable_grad() = torch::tensor({0.6, 0.8}, torch::kFloat64);
    opt.step();
    EXPECT_NEAR(w[0].item<double>(), w0, 1e-12) << "lr " << lr;
    EXPECT_NEAR(w[1].item<double>(), w1, 1e-12) << "lr " << lr;
    EXPECT_NEAR(opt.param_state(w)->trust_ratio().item<double>(), applied, 1e-15);
  }
}

TEST_P(LarsByHand, NesterovLooksAhead) {
  // g = 1, mu = 0.9, lr = 0.1, no trust ratio:
  //   step 1: buf = 1,   u = 1 + 0.9 * 1 = 1.9,     w = 1 - 0.19 = 0.81
  //   step 2: buf = 1.9, u = 1 + 0.9 * 1.9 = 2.71,  w = 0.81 - 0.271 = 0.539
  torch::Tensor w = leaf({1.0});
  Lars opt({w}, LarsOptions(0.1).momentum(0.9).nesterov(true).adapt(false).fused(GetParam()));
  for (double expected : {0.81, 0.539}) {
    w.mutable_grad() = torch::ones({1}, torch::kFloat64);
    opt.step();
    EXPECT_NEAR(w.item<double>(), expected, 1e-12);
  }
}

TEST_P(LarsByHand, ZeroNormsGiveRatioOne) {
  // ||w|| = 0: ratio 1, w = 0 - 0.5 * g. ||g|| = 0: ratio 1, w unchanged.
  torch::Tensor zero_w = leaf({0.0, 0.0});
  torch::Tensor zero_g = leaf({1.0, 2.0});
  Lars opt({zero_w, zero_g}, LarsOptions(0.5).momentum(0.0).fused(GetParam()));
  zero_w.mutable_grad() = torch::tensor({1.0, -2.0}, torch::kFloat64);
  zero_g.mutable_grad() = torch::zeros({2}, torch::kFloat64);
  opt.step();
  EXPECT_TRUE(torch::allclose(zero_w, torch::tensor({-0.5, 1.0}, torch::kFloat64)));
  EXPECT_TRUE(torch::equal(zero_g, torch::tensor({1.0, 2.0}, torch::kFloat64)));
  EXPECT_EQ(opt.param_state(zero_w)->trust_ratio().item<double>(), 1.0);
  EXPECT_EQ(opt.param_state(zero_g)->trust_ratio().item<double>(), 1.0);
}

TEST_P(LarsByHand, AlwaysAdaptOverridesAdaptFalse) {
  torch::Tensor w = leaf({3.0, 4.0});
  Lars opt({w}, LarsOptions(2.0)
                    .momentum(0.0)
                    .trust_coefficient(0.01)
                    .eps(0.0)
                    .adapt(false)
                    .always_adapt(true)
                    .fused(GetParam()));
  w.mutable_grad() = torch::tensor({0.6, 0.8}, torch::kFloat64);
  opt.step();
  EXPECT_NEAR(w[0].item<double>(), 2.94, 1e-12);  // as in TrustRatioScalesTheGradient
}

TEST_P(LarsByHand, NotAdaptedHasNoTrustRatioAndLeavesGradAlone) {
  torch::Tensor w = leaf({3.0, 4.0});
  Lars opt({w}, LarsOptions(1.0).momentum(0.9).adapt(false).fused(GetParam()));
  w.mutable_grad() = torch::tensor({0.6, 0.8}, torch::kFloat64);
  opt.step();
  EXPECT_FALSE(opt.param_state(w)->trust_ratio().defined());
  EXPECT_TRUE(torch::equal(w.grad(), torch::tensor({0.6, 0.8}, torch::kFloat64)));
  EXPECT_TRUE(torch::allclose(w, torch::tensor({2.4, 3.2}, torch::kFloat64)));
}

INSTANTIATE_TEST_SUITE_P(FusedAndAten, LarsByHand, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& i) {
                           return std::string(i.param ? "fused" : "aten");
                         });

TEST(LarsSerialization, StateRoundTripsThroughSaveAndLoad) {
  torch::manual_seed(3);
  auto make_params = [] {
    return std::vector<torch::Tensor>{torch::randn({6, 5}).set_requires_grad(true),
                                      torch::randn({5}).set_requires_grad(true)};
  };
  std::vector<torch::Tensor> a = make_params();
  auto options = [](double wd, bool adapt) {
    return std::make_unique<LarsOptions>(
        LarsOptions(0.5).momentum(0.9).weight_decay(wd).adapt(adapt).lr_in_momentum(true));
  };
  auto groups_of = [&](const std::vector<torch::Tensor>& p) {
    std::vector<torch::optim::OptimizerParamGroup> g;
    g.emplace_back(std::vector<torch::Tensor>{p[0]}, options(1e-4, true));
    g.emplace_back(std::vector<torch::Tensor>{p[1]}, options(0.0, false));
    return g;
  };
  Lars first(groups_of(a));
  std::vector<std::vector<torch::Tensor>> grads;
  for (int s = 0; s < 5; ++s) grads.push_back({torch::randn({6, 5}), torch::randn({5})});
  auto step = [&](Lars& opt, std::vector<torch::Tensor>& p, int s) {
    for (size_t i = 0; i < p.size(); ++i) p[i].mutable_grad() = grads[s][i].clone();
    opt.step();
  };
  for (int s = 0; s < 3; ++s) step(first, a, s);

  std::stringstream buffer;
  torch::save(first, buffer);
  std::vector<torch::Tensor> b;
  for (const auto& t : a) b.push_back(t.detach().clone().set_requires_grad(true));
  Lars second(groups_of(b));
  torch::load(second, buffer);

  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_NE(second.param_state(b[i]), nullptr);
    EXPECT_TRUE(*first.param_state(a[i]) == *second.param_state(b[i])) << "param " << i;
  }
  EXPECT_FALSE(second.param_state(b[1])->trust_ratio().defined());
  for (int s = 3; s < 5; ++s) {
    step(first, a, s);
    step(second, b, s);
  }
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << "param " << i;
}

TEST(LarsOptionsTest, SerializeRoundTripAndValidation) {
  const LarsOptions o = LarsOptions(0.3)
                            .momentum(0.8)
                            .weight_decay(1e-3)
                            .nesterov(true)
                            .trust_coefficient(0.02)
                            .eps(1e-9)
                            .trust_clip(true)
                            .always_adapt(true)
                            .adapt(false)
                            .lr_in_momentum(true);
  torch::serialize::OutputArchive out;
  o.serialize(out);
  std::stringstream s;
  out.save_to(s);
  torch::serialize::InputArchive in;
  in.load_from(s);
  LarsOptions back(0.0);
  back.serialize(in);
  EXPECT_TRUE(back == o);

  torch::Tensor w = leaf({1.0});
  EXPECT_THROW(Lars({w}, LarsOptions(-1.0)), Error);
  EXPECT_THROW(Lars({w}, LarsOptions(0.1).momentum(0.0).nesterov(true)), Error);
}

}  // namespace
}  // namespace batchlab::optim
