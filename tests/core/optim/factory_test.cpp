#include "core/optim/factory.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/optim/lamb.h"
#include "core/optim/lars.h"

namespace batchlab::optim {
namespace {

std::vector<NamedParameter> small_net() {
  torch::manual_seed(1);
  std::vector<NamedParameter> p;
  auto add = [&](const std::string& name, std::vector<int64_t> shape) {
    p.push_back({name, torch::randn(shape).set_requires_grad(true)});
  };
  add("conv.weight", {4, 3, 3, 3});
  add("bn.weight", {4});
  add("bn.bias", {4});
  add("fc.weight", {5, 4});
  add("fc.bias", {5});
  return p;
}

void give_grads(const std::vector<NamedParameter>& params, double value) {
  for (const auto& p : params) p.tensor.mutable_grad() = torch::full_like(p.tensor, value);
}

config::OptimConfig config_for(const std::string& name) {
  config::OptimConfig c;
  c.name = name;
  c.momentum = 0.85;
  c.betas = {0.8, 0.99};
  c.eps = 1e-7;
  c.weight_decay = 5e-4;
  c.trust_coefficient = 0.002;
  c.trust_clip = true;
  c.lr_in_momentum = true;
  c.bias_correction = false;
  c.grad_averaging = false;
  c.grad_clip = name == "lamb" ? 1.0 : 0.0;
  return c;
}

// Each group's options, cast to the expected type (throws std::bad_cast on the wrong one).
template <class Options>
const Options& options_of(TrainingOptimizer& t, size_t group) {
  return dynamic_cast<const Options&>(t.optimizer().param_groups().at(group).options());
}

TEST(MakeOptimizer, SgdAndNesterovAreTorchSgdWithEveryOptionSet) {
  const auto params = small_net();
  for (const std::string name : {"sgd", "nesterov"}) {
    auto t = make_optimizer(config_for(name), params, 0.4);
    EXPECT_NE(dynamic_cast<torch::optim::SGD*>(&t->optimizer()), nullptr) << name;
    ASSERT_EQ(t->groups().size(), 2u);
    // group 0: the default exclude (ndim<2): no weight decay; group 1: everything else
    const auto& excluded = options_of<torch::optim::SGDOptions>(*t, 0);
    const auto& rest = options_of<torch::optim::SGDOptions>(*t, 1);
    EXPECT_EQ(excluded.weight_decay(), 0.0);
    EXPECT_EQ(rest.weight_decay(), 5e-4);
    for (const auto* o : {&excluded, &rest}) {
      EXPECT_EQ(o->lr(), 0.4);
      EXPECT_EQ(o->momentum(), 0.85);
      EXPECT_EQ(o->dampening(), 0.0);
      EXPECT_EQ(o->nesterov(), name == "nesterov");
    }
    EXPECT_FALSE(t->groups()[1].adapt);  // no trust ratio for SGD
    EXPECT_EQ(t->name(), name);
  }
}

TEST(MakeOptimizer, AdamIsL2AndAdamwIsDecoupled) {
  const auto params = small_net();
  auto adam = make_optimizer(config_for("adam"), params, 1e-3);
  ASSERT_NE(dynamic_cast<torch::optim::Adam*>(&adam->optimizer()), nullptr);
  const auto& a = options_of<torch::optim::AdamOptions>(*adam, 1);
  EXPECT_EQ(a.lr(), 1e-3);
  EXPECT_EQ(a.betas(), std::make_tuple(0.8, 0.99));
  EXPECT_EQ(a.eps(), 1e-7);
  EXPECT_EQ(a.weight_decay(), 5e-4);
  EXPECT_FALSE(a.amsgrad());
  EXPECT_EQ(options_of<torch::optim::AdamOptions>(*adam, 0).weight_decay(), 0.0);

  auto adamw = make_optimizer(config_for("adamw"), params, 1e-3);
  ASSERT_NE(dynamic_cast<torch::optim::AdamW*>(&adamw->optimizer()), nullptr);
  const auto& w = options_of<torch::optim::AdamWOptions>(*adamw, 1);
  EXPECT_EQ(w.betas(), std::make_tuple(0.8, 0.99));
  EXPECT_EQ(w.eps(), 1e-7);
  EXPECT_EQ(w.weight_decay(), 5e-4);
  // LibTorch's AdamW default weight decay is 1e-2: the excluded group must get 0 explicitly.
  EXPECT_EQ(options_of<torch::optim::AdamWOptions>(*adamw, 0).weight_decay(), 0.0);
}

TEST(MakeOptimizer, LarsGetsConfigOptionsAndPerGroupAdaptation) {
  auto c = config_for("lars");
  c.nesterov = true;
  const auto params = small_net();
  auto t = make_optimizer(c, params, 2.0);
  ASSERT_NE(dynamic_cast<Lars*>(&t->optimizer()), nullptr);
  const auto& excluded = options_of<LarsOptions>(*t, 0);
  const auto& rest = options_of<LarsOptions>(*t, 1);
  EXPECT_FALSE(excluded.adapt());
  EXPECT_TRUE(rest.adapt());
  EXPECT_EQ(excluded.weight_decay(), 0.0);
  EXPECT_EQ(rest.weight_decay(), 5e-4);
  EXPECT_EQ(rest.lr(), 2.0);
  EXPECT_EQ(rest.momentum(), 0.85);
  EXPECT_TRUE(rest.nesterov());
  EXPECT_EQ(rest.trust_coefficient(), 0.002);
  EXPECT_EQ(rest.eps(), 1e-7);
  EXPECT_TRUE(rest.trust_clip());
  EXPECT_FALSE(rest.always_adapt());
  EXPECT_TRUE(rest.lr_in_momentum());
  EXPECT_TRUE(t->groups()[1].adapt);
  EXPECT_FALSE(t->groups()[0].adapt);
  EXPECT_EQ(t->groups()[0].names, (std::vector<std::string>{"bn.weight", "bn.bias", "fc.bias"}));
  EXPECT_EQ(t->groups()[1].names, (std::vector<std::string>{"conv.weight", "fc.weight"}));
}

TEST(MakeOptimizer, LambGetsConfigOptionsAndClipsItself) {
  const auto params = small_net();
  auto t = make_optimizer(config_for("lamb"), params, 0.01);
  auto* lamb = dynamic_cast<Lamb*>(&t->optimizer());
  ASSERT_NE(lamb, nullptr);
  const auto& o = options_of<LambOptions>(*t, 1);
  EXPECT_EQ(o.betas(), std::make_tuple(0.8, 0.99));
  EXPECT_EQ(o.eps(), 1e-7);
  EXPECT_EQ(o.weight_decay(), 5e-4);
  EXPECT_FALSE(o.bias_correction());
  EXPECT_FALSE(o.grad_averaging());
  EXPECT_TRUE(o.trust_clip());
  EXPECT_TRUE(o.adapt());
  EXPECT_EQ(static_cast<const LambOptions&>(lamb->defaults()).max_grad_norm(), 1.0);

  give_grads(params, 1.0);  // global norm sqrt(108 + 4 + 4 + 20 + 5) = sqrt(141)
  t->step();
  ASSERT_TRUE(t->last_grad_norm().defined());
  EXPECT_NEAR(t->last_grad_norm().item<double>(), std::sqrt(141.0), 1e-9);
  // LAMB does not modify the gradients (the clip factor is applied inside the update).
  EXPECT_TRUE(torch::equal(params[0].tensor.grad(), torch::ones_like(params[0].tensor)));
}

TEST(MakeOptimizer, UnknownNameAndBadValuesAreConfigErrors) {
  const auto params = small_net();
  EXPECT_THROW(make_optimizer(config_for("adagrad"), params, 0.1), ConfigError);
  auto c = config_for("nesterov");
  c.momentum = 0.0;
  EXPECT_THROW(make_optimizer(c, params, 0.1), ConfigError);
  auto d = config_for("adam");
  d.betas = {1.0, 0.999};
  EXPECT_THROW(make_optimizer(d, params, 0.1), ConfigError);
  auto e = config_for("lars");
  e.groups.push_back({"*.nonexistent", std::nullopt, std::nullopt, 1.0});
  EXPECT_THROW(make_optimizer(e, params, 0.1), ConfigError);
}

TEST(TrainingOptimizerTest, SetLrAppliesEachRulesScale) {
  auto c = config_for("sgd");
  config::ParamGroupRule head;
  head.match = "fc.*";
  head.lr_scale = 10.0;
  c.groups = {head};
  const auto params = small_net();
  auto t = make_optimizer(c, params, 0.1);
  ASSERT_EQ(t->groups().size(), 3u);  // fc.*, ndim<2, default
  EXPECT_EQ(t->groups()[0].rule, "fc.*");
  EXPECT_NEAR(t->optimizer().param_groups()[0].options().get_lr(), 1.0, 1e-15);  // 0.1 * 10
  t->set_lr(0.02);
  EXPECT_EQ(t->lr(), 0.02);
  EXPECT_NEAR(t->optimizer().param_groups()[0].options().get_lr(), 0.2, 1e-15);
  EXPECT_EQ(t->optimizer().param_groups()[1].options().get_lr(), 0.02);
  EXPECT_EQ(t->optimizer().param_groups()[2].options().get_lr(), 0.02);
}

TEST(TrainingOptimizerTest, TrustRatiosInParameterOrder) {
  const auto params = small_net();
  auto lars = make_optimizer(config_for("lars"), params, 1.0);
  EXPECT_EQ(lars->last_trust_ratios().size(), params.size());
  EXPECT_FALSE(lars->last_trust_ratios()[0].defined());  // before the first step
  std::vector<double> w_norm;
  for (const auto& p : params) w_norm.push_back(p.tensor.detach().norm().item<double>());
  give_grads(params, 0.5);
  lars->step();
  const auto ratios = lars->last_trust_ratios();
  ASSERT_EQ(ratios.size(), params.size());
  // conv.weight and fc.weight are adapted; the norms and biases (ndim<2) are not.
  const std::vector<bool> adapted = {true, false, false, true, false};
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(ratios[i].defined(), adapted[i]) << params[i].name;
    if (!ratios[i].defined()) continue;
    EXPECT_EQ(ratios[i].dim(), 0);
    EXPECT_EQ(ratios[i].scalar_type(), torch::kFloat64);
    // eta 0.002, wd 5e-4, eps 1e-7, lr 1, trust_clip: min(ratio / lr, 1)
    const double g_norm = 0.5 * std::sqrt(static_cast<double>(params[i].tensor.numel()));
    const double expected = std::min(0.002 * w_norm[i] / (g_norm + 5e-4 * w_norm[i] + 1e-7), 1.0);
    EXPECT_NEAR(ratios[i].item<double>(), expected, 1e-6 * expected) << params[i].name;
  }

  auto sgd = make_optimizer(config_for("sgd"), small_net(), 0.1);
  for (const auto& r : sgd->last_trust_ratios()) EXPECT_FALSE(r.defined());
}

TEST(TrainingOptimizerTest, GradClipForOptimizersThatDoNotClipThemselves) {
  auto c = config_for("sgd");
  c.grad_clip = 1.0;
  c.momentum = 0.0;
  c.weight_decay = 0.0;
  const auto params = small_net();
  std::vector<torch::Tensor> before;
  for (const auto& p : params) before.push_back(p.tensor.detach().clone());
  auto t = make_optimizer(c, params, 0.1);
  give_grads(params, 1.0);  // global norm sqrt(141): every gradient becomes 1 / sqrt(141)
  t->step();
  EXPECT_NEAR(t->last_grad_norm().item<double>(), std::sqrt(141.0), 1e-9);
  const double g = 1.0 / std::sqrt(141.0);
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_TRUE(torch::allclose(params[i].tensor.grad(), torch::full_like(before[i], g)));
    EXPECT_TRUE(torch::allclose(params[i].tensor.detach(), before[i] - 0.1 * g, 1e-6, 1e-7));
  }
  c.grad_clip = 0.0;
  auto off = make_optimizer(c, params, 0.1);
  off->step();
  EXPECT_FALSE(off->last_grad_norm().defined());
}

}  // namespace
}  // namespace batchlab::optim
