// LAMB by hand: trust ratio, bias correction, trust clipping, zero norms, global clipping across
// groups, and state round-trips through torch::save / torch::load.
#include "core/optim/lamb.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <optional>
#include <sstream>
#include <vector>

#include "core/errors.h"
#include "tests/core/optim/optim_test_util.h"

namespace batchlab::optim {
namespace {

using test_util::leaf;

class LambByHand : public testing::TestWithParam<bool> {
 protected:
  LambOptions base(double lr) const {
    return LambOptions(lr)
        .betas(std::make_tuple(0.9, 0.999))
        .eps(0.0)
        .max_grad_norm(0.0)
        .fused(GetParam());
  }
};

TEST_P(LambByHand, FirstStepIsSignTimesTrustRatio) {
  // w = (3, 4), g = (0.6, 0.8), bias correction on, eps 0, wd 0, lr 0.1:
  //   m = 0.1 g, v = 0.001 g^2; m_hat = g, sqrt(v_hat) = |g|  ->  r = (1, 1)
  //   ratio = ||w|| / ||r|| = 5 / sqrt(2) = 3.5355339059327378
  //   w -= 0.1 * 3.5355339059327378 * (1, 1) = (2.6464466094067263, 3.6464466094067263)
  torch::Tensor w = leaf({3.0, 4.0});
  Lamb opt({w}, base(0.1));
  w.mutable_grad() = torch::tensor({0.6, 0.8}, torch::kFloat64);
  opt.step();
  EXPECT_NEAR(w[0].item<double>(), 2.6464466094067263, 1e-12);
  EXPECT_NEAR(w[1].item<double>(), 3.6464466094067263, 1e-12);
  EXPECT_NEAR(opt.param_state(w)->trust_ratio().item<double>(), 3.5355339059327378, 1e-12);
  EXPECT_EQ(opt.param_state(w)->step(), 1);
  EXPECT_TRUE(torch::equal(w.grad(), torch::tensor({0.6, 0.8}, torch::kFloat64)));
}

TEST_P(LambByHand, TrustClipCapsTheRatioAtOne) {
  // Same step; ratio 3.54 clipped to 1: w = (3 - 0.1, 4 - 0.1) = (2.9, 3.9)
  torch::Tensor w = leaf({3.0, 4.0});
  Lamb opt({w}, base(0.1).trust_clip(true));
  w.mutable_grad() = torch::tensor({0.6, 0.8}, torch::kFloat64);
  opt.step();
  EXPECT_NEAR(w[0].item<double>(), 2.9, 1e-12);
  EXPECT_NEAR(w[1].item<double>(), 3.9, 1e-12);
  EXPECT_EQ(opt.param_state(w)->trust_ratio().item<double>(), 1.0);
}

TEST_P(LambByHand, BiasCorrectionOnAndOffWithoutAdaptation) {
  // Not adapted (ratio 1), so the raw Adam-style direction shows:
  //   on:  r = m_hat / sqrt(v_hat) = (1, 1)                       -> w = (2.9, 3.9)
  //   off: r = 0.1 g / (sqrt(0.001) |g|) = 0.1 / 0.0316227766 = 3.1622776601683795 per entry
  //        -> w = (3 - 0.31622776601683794, 4 - 0.31622776601683794)
  for (bool correction : {true, false}) {
    torch::Tensor w = leaf({3.0, 4.0});
    Lamb opt({w}, base(0.1).adapt(false).bias_correction(correction));
    w.mutable_grad() = torch::tensor({0.6, 0.8}, torch::kFloat64);
    opt.step();
    const double delta = correction ? 0.1 : 0.31622776601683794;
    EXPECT_NEAR(w[0].item<double>(), 3.0 - delta, 1e-12) << correction;
    EXPECT_NEAR(w[1].item<double>(), 4.0 - delta, 1e-12) << correction;
    EXPECT_FALSE(opt.param_state(w)->trust_ratio().defined());
  }
}

TEST_P(LambByHand, ZeroNormsGiveRatioOne) {
  // ||w|| = 0: ratio 1 and w = -lr * (1, -1) (signs of g); g = 0 on the first step: m = v = 0,
  // r = 0 / eps = 0, ratio 1, w unchanged.
  torch::Tensor zero_w = leaf({0.0, 0.0});
  torch::Tensor zero_g = leaf({1.0, 2.0});
  Lamb opt({zero_w, zero_g}, base(0.5).eps(1e-6));
  zero_w.mutable_grad() = torch::tensor({1.0, -2.0}, torch::kFloat64);
  zero_g.mutable_grad() = torch::zeros({2}, torch::kFloat64);
  opt.step();
  EXPECT_TRUE(torch::allclose(zero_w, torch::tensor({-0.5, 0.5}, torch::kFloat64), 1e-5));
  EXPECT_TRUE(torch::equal(zero_g, torch::tensor({1.0, 2.0}, torch::kFloat64)));
  EXPECT_EQ(opt.param_state(zero_w)->trust_ratio().item<double>(), 1.0);
  EXPECT_EQ(opt.param_state(zero_g)->trust_ratio().item<double>(), 1.0);
}

TEST_P(LambByHand, ClipsByTheGlobalNormOfAllGroups) {
  // Two groups, g1 = (3, 0), g2 = (0, 4): global norm 5 > max 1, so both gradients are divided by 5
  // even though each alone has norm < 5. The result equals a step on pre-divided gradients without
  // clipping, and p.grad is left as it was. (eps > 0: the zero gradient entries would give 0 / 0.)
  auto run = [&](double max_norm, double divide) {
    std::vector<torch::Tensor> p = {leaf({1.0, 2.0}), leaf({-1.0, 0.5})};
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(std::vector<torch::Tensor>{p[0]},
                        std::make_unique<LambOptions>(base(0.1).eps(1e-6).weight_decay(0.01)));
    groups.emplace_back(std::vector<torch::Tensor>{p[1]},
                        std::make_unique<LambOptions>(base(0.1).eps(1e-6).adapt(false)));
    Lamb opt(groups, base(0.1).max_grad_norm(max_norm));
    p[0].mutable_grad() = torch::tensor({3.0, 0.0}, torch::kFloat64) / divide;
    p[1].mutable_grad() = torch::tensor({0.0, 4.0}, torch::kFloat64) / divide;
    opt.step();
    EXPECT_TRUE(torch::equal(p[0].grad(), torch::tensor({3.0, 0.0}, torch::kFloat64) / divide));
    return p;
  };
  const auto clipped = run(1.0, 1.0);
  const auto reference = run(0.0, 5.0);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(torch::allclose(clipped[i], reference[i], 1e-14, 0.0)) << i;
  }
  // Below the threshold nothing changes: max 10 > 5.
  const auto unclipped = run(10.0, 1.0);
  const auto plain = run(0.0, 1.0);
  for (size_t i = 0; i < 2; ++i) EXPECT_TRUE(torch::equal(unclipped[i], plain[i])) << i;
}

TEST_P(LambByHand, ClipsByAGivenNormWithoutMeasuringIt) {
  // The caller's norm (10, not the true 5) sets the clip factor: the same as unclipped gradients
  // divided by 10.
  auto run = [&](double max_norm, double divide, std::optional<double> given) {
    std::vector<torch::Tensor> p = {leaf({1.0, 2.0}), leaf({-1.0, 0.5})};
    Lamb opt(p, base(0.1).eps(1e-6).weight_decay(0.01).max_grad_norm(max_norm));
    p[0].mutable_grad() = torch::tensor({3.0, 0.0}, torch::kFloat64) / divide;
    p[1].mutable_grad() = torch::tensor({0.0, 4.0}, torch::kFloat64) / divide;
    if (given) {
      GradNorm norm;
      norm.host = *given;
      norm.norm = torch::scalar_tensor(*given, torch::kFloat64);
      opt.step_with_grad_norm(norm);
    } else {
      opt.step();
    }
    return p;
  };
  const auto clipped = run(1.0, 1.0, 10.0);
  const auto reference = run(0.0, 10.0, std::nullopt);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(torch::allclose(clipped[i], reference[i], 1e-14, 0.0)) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(FusedAndAten, LambByHand, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& i) {
                           return std::string(i.param ? "fused" : "aten");
                         });

TEST(LambSerialization, StateRoundTripsThroughSaveAndLoad) {
  torch::manual_seed(5);
  auto options = [](double wd, bool adapt) {
    return std::make_unique<LambOptions>(LambOptions(0.01).weight_decay(wd).adapt(adapt));
  };
  auto groups_of = [&](const std::vector<torch::Tensor>& p) {
    std::vector<torch::optim::OptimizerParamGroup> g;
    g.emplace_back(std::vector<torch::Tensor>{p[0]}, options(0.01, true));
    g.emplace_back(std::vector<torch::Tensor>{p[1]}, options(0.0, false));
    return g;
  };
  std::vector<torch::Tensor> a = {torch::randn({7, 3}).set_requires_grad(true),
                                  torch::randn({3}).set_requires_grad(true)};
  Lamb first(groups_of(a));
  std::vector<std::vector<torch::Tensor>> grads;
  for (int s = 0; s < 5; ++s) grads.push_back({torch::randn({7, 3}), torch::randn({3})});
  auto step = [&](Lamb& opt, std::vector<torch::Tensor>& p, int s) {
    for (size_t i = 0; i < p.size(); ++i) p[i].mutable_grad() = grads[s][i].clone();
    opt.step();
  };
  for (int s = 0; s < 3; ++s) step(first, a, s);

  std::stringstream buffer;
  torch::save(first, buffer);
  std::vector<torch::Tensor> b;
  for (const auto& t : a) b.push_back(t.detach().clone().set_requires_grad(true));
  Lamb second(groups_of(b));
  torch::load(second, buffer);
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_NE(second.param_state(b[i]), nullptr);
    EXPECT_EQ(second.param_state(b[i])->step(), 3);
    EXPECT_TRUE(*first.param_state(a[i]) == *second.param_state(b[i])) << "param " << i;
  }
  for (int s = 3; s < 5; ++s) {
    step(first, a, s);
    step(second, b, s);
  }
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << "param " << i;
}

TEST(LambOptionsTest, SerializeRoundTripAndValidation) {
  const LambOptions o = LambOptions(0.3)
                            .betas(std::make_tuple(0.8, 0.95))
                            .eps(1e-7)
                            .weight_decay(0.1)
                            .bias_correction(false)
                            .grad_averaging(false)
                            .max_grad_norm(2.0)
                            .trust_clip(true)
                            .always_adapt(true)
                            .adapt(false);
  torch::serialize::OutputArchive out;
  o.serialize(out);
  std::stringstream s;
  out.save_to(s);
  torch::serialize::InputArchive in;
  in.load_from(s);
  LambOptions back(0.0);
  back.serialize(in);
  EXPECT_TRUE(back == o);

  torch::Tensor w = leaf({1.0});
  EXPECT_THROW(Lamb({w}, LambOptions(0.1).betas(std::make_tuple(1.0, 0.9))), Error);
  EXPECT_THROW(Lamb({w}, LambOptions(0.1).max_grad_norm(-1.0)), Error);
}

}  // namespace
}  // namespace batchlab::optim
