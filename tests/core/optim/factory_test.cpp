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
#include "core/optim/lion.h"
#include "core/optim/muon.h"
#include "core/optim/schedule_free_adamw.h"

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
  const GradNorm norm = t->grad_norm();
  ASSERT_TRUE(norm.norm.defined());
  EXPECT_NEAR(norm.norm.item<double>(), std::sqrt(141.0), 1e-9);
  t->step(norm);
  // LAMB does not modify the gradients (the clip factor is applied inside the update).
  EXPECT_TRUE(torch::equal(params[0].tensor.grad(), torch::ones_like(params[0].tensor)));
}

// User input is validated in core/config (tests/core/config); the factory asserts that its config
// passed that validation, with the schema's own rules. A violation is an internal error (exit 1),
// never ConfigError: that would mean a second, user-facing definition of the rule.
void expect_internal_error(const config::OptimConfig& c, const std::string& key,
                           double peak = 0.1) {
  const auto params = small_net();
  try {
    make_optimizer(c, params, peak);
    ADD_FAILURE() << "expected an internal error about " << key;
  } catch (const InputError& e) {
    ADD_FAILURE() << "a precondition reported as bad input: " << e.what();
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("internal error: make_optimizer"), std::string::npos) << what;
    EXPECT_NE(what.find(key), std::string::npos) << what;
  }
}

TEST(MakeOptimizer, ConfigsThatSkippedValidationAreInternalErrors) {
  expect_internal_error(config_for("adagrad"), "optim.name");
  auto nesterov = config_for("nesterov");
  nesterov.momentum = 0.0;
  expect_internal_error(nesterov, "Nesterov");
  auto adam = config_for("adam");
  adam.betas = {1.0, 0.999};
  expect_internal_error(adam, "optim.betas");
  expect_internal_error(config_for("sgd"), "peak_lr", -0.1);
}

TEST(MakeOptimizer, AssertsTheSchemaRulesWhereTheyUsedToDrift) {
  // The factory once accepted momentum 1, lr_scale 0 and eps 0 (its own >= 0 rules); the schema's
  // [0, 1), > 0 and > 0 are now the only definition.
  auto momentum = config_for("sgd");
  momentum.momentum = 1.0;
  expect_internal_error(momentum, "optim.momentum");
  auto lr_scale = config_for("sgd");
  lr_scale.groups.push_back({"fc.*", std::nullopt, std::nullopt, 0.0});
  expect_internal_error(lr_scale, "optim.groups[0].lr_scale");
  auto eps = config_for("adam");
  eps.eps = 0.0;
  expect_internal_error(eps, "optim.eps");
  auto pattern = config_for("sgd");
  pattern.exclude = {"ndim<x"};
  expect_internal_error(pattern, "optim.exclude");
}

TEST(MakeOptimizer, ARuleMatchingNoParameterIsAConfigError) {
  // Needs the model's parameter names, so only the factory can tell: bad input, not a bug.
  const auto params = small_net();
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
  EXPECT_NEAR(t->grad_norm().norm.item<double>(), std::sqrt(141.0), 1e-9);
  t->step();
  const double g = 1.0 / std::sqrt(141.0);
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_TRUE(torch::allclose(params[i].tensor.grad(), torch::full_like(before[i], g)));
    EXPECT_TRUE(torch::allclose(params[i].tensor.detach(), before[i] - 0.1 * g, 1e-6, 1e-7));
  }
  c.grad_clip = 0.0;
  auto off = make_optimizer(c, params, 0.1);
  off->step();  // no clipping: the gradients stay as they were
  for (const auto& p : params) {
    EXPECT_TRUE(torch::allclose(p.tensor.grad(), torch::full_like(p.tensor, g), 1e-12, 0.0));
  }
}

// The norm the caller passes is the one clipped by: it is not measured again inside the step.
TEST(TrainingOptimizerTest, ClipsByTheNormItIsGiven) {
  for (const std::string name : {"sgd", "lamb"}) {
    auto c = config_for(name);
    c.grad_clip = 1.0;
    c.momentum = 0.0;
    c.weight_decay = 0.0;
    auto given = small_net();
    auto reference = small_net();  // the same initial weights (seeded)
    auto t = make_optimizer(c, given, 0.1);
    c.grad_clip = 0.0;
    auto r = make_optimizer(c, reference, 0.1);
    give_grads(given, 1.0);  // true norm sqrt(141), but the caller says 20: factor 20
    give_grads(reference, 1.0 / 20.0);
    GradNorm claimed;
    claimed.host = 20.0;
    claimed.norm = torch::scalar_tensor(20.0, torch::kFloat64);
    t->step(claimed);
    r->step();
    for (size_t i = 0; i < given.size(); ++i) {
      EXPECT_TRUE(
          torch::allclose(given[i].tensor.detach(), reference[i].tensor.detach(), 1e-6, 1e-7))
          << name << " " << given[i].name;
    }
  }
}

// Muon: a rule's 2-D parameters take the Muon rule, the rest of its group AdamW in a group of its
// own; excluded parameters (biases, norms) are AdamW without decay.
TEST(MakeOptimizer, MuonSplitsEachRuleIntoMatricesAndAdamw) {
  const auto params = small_net();
  config::OptimConfig c = config_for("muon");
  c.ns_steps = 3;
  c.ns_dtype = "fp32";
  c.muon_adjust_lr = "match_rms_adamw";
  c.implementation = "per_tensor";
  auto t = make_optimizer(c, params, 0.02);
  // Rules in order: the exclude ndim<2 (AdamW, no decay), then the default rule split in two.
  ASSERT_EQ(t->groups().size(), 3u);
  EXPECT_EQ(t->groups()[0].rule, "ndim<2");
  EXPECT_FALSE(t->groups()[0].adapt);
  EXPECT_EQ(t->groups()[1].rule, "default");
  EXPECT_EQ(t->groups()[1].names, std::vector<std::string>{"fc.weight"});
  EXPECT_TRUE(t->groups()[1].adapt);
  EXPECT_EQ(t->groups()[2].rule, "default (adamw)");
  EXPECT_EQ(t->groups()[2].names, std::vector<std::string>{"conv.weight"});
  EXPECT_FALSE(t->groups()[2].adapt);
  const auto& excluded = options_of<MuonOptions>(*t, 0);
  EXPECT_FALSE(excluded.orthogonalize());
  EXPECT_EQ(excluded.weight_decay(), 0.0);
  const auto& m = options_of<MuonOptions>(*t, 1);
  EXPECT_TRUE(m.orthogonalize());
  EXPECT_EQ(m.momentum(), 0.85);
  EXPECT_EQ(m.ns_steps(), 3);
  EXPECT_EQ(m.ns_dtype(), "fp32");
  EXPECT_EQ(m.adjust_lr(), "match_rms_adamw");
  EXPECT_EQ(m.weight_decay(), 5e-4);
  EXPECT_FALSE(m.foreach ());
  const auto& a = options_of<MuonOptions>(*t, 2);
  EXPECT_FALSE(a.orthogonalize());
  EXPECT_EQ(a.betas(), std::make_tuple(0.8, 0.99));
  EXPECT_EQ(a.weight_decay(), 5e-4);
  give_grads(params, 0.5);
  t->step();
  EXPECT_TRUE(std::isfinite(params[3].tensor.sum().item<double>()));
}

// A rule with adapt = false sends its matrices to AdamW too (embeddings and heads, as Muon's
// users route them).
TEST(MakeOptimizer, MuonRuleWithoutAdaptIsAdamw) {
  const auto params = small_net();
  config::OptimConfig c = config_for("muon");
  config::ParamGroupRule rule;
  rule.match = "fc.*";
  rule.adapt = false;
  c.groups.push_back(rule);
  auto t = make_optimizer(c, params, 0.02);
  for (size_t g = 0; g < t->groups().size(); ++g) {
    const auto& names = t->groups()[g].names;
    if (std::find(names.begin(), names.end(), "fc.weight") != names.end()) {
      EXPECT_FALSE(options_of<MuonOptions>(*t, g).orthogonalize());
      EXPECT_EQ(t->groups()[g].rule, "fc.*");
    }
  }
}

TEST(MakeOptimizer, LionAndScheduleFreeGetTheirOptions) {
  const auto params = small_net();
  auto lion = make_optimizer(config_for("lion"), params, 1e-4);
  // Group 0 is the exclude rule ndim<2 (no decay), group 1 the default.
  EXPECT_EQ(options_of<LionOptions>(*lion, 1).betas(), std::make_tuple(0.8, 0.99));
  EXPECT_EQ(options_of<LionOptions>(*lion, 1).weight_decay(), 5e-4);
  EXPECT_EQ(options_of<LionOptions>(*lion, 0).weight_decay(), 0.0);
  config::OptimConfig c = config_for("schedulefree_adamw");
  c.poly_power = 1.0;
  c.weight_lr_power = 0.5;
  auto sf = make_optimizer(c, params, 1e-3);
  const auto& o = options_of<ScheduleFreeAdamWOptions>(*sf, 1);
  EXPECT_EQ(o.r(), 1.0);
  EXPECT_EQ(o.weight_lr_power(), 0.5);
  EXPECT_EQ(o.eps(), 1e-7);
  EXPECT_EQ(o.weight_decay(), 5e-4);
}

// The trainer's guard: Schedule-Free's evaluation weights while it lives, the training weights
// after; every other optimizer's parameters untouched.
TEST(TrainingOptimizerTest, EvalWeightsGuardSwapsOnlyForScheduleFree) {
  for (const std::string name : {"schedulefree_adamw", "adamw", "muon", "lion"}) {
    const auto params = small_net();
    auto t = make_optimizer(config_for(name), params, 1e-2);
    for (int s = 0; s < 3; ++s) {
      give_grads(params, 0.1 * (s + 1));
      t->step();
    }
    const torch::Tensor before = params[0].tensor.detach().clone();
    {
      const auto weights = t->eval_weights();
      const bool changed = !torch::equal(params[0].tensor, before);
      EXPECT_EQ(changed, name == "schedulefree_adamw") << name;
      const auto inner = t->eval_weights();  // nested: stays on the evaluation weights
    }
    EXPECT_TRUE(torch::equal(params[0].tensor, before)) << name;
    t->train_weights();  // nothing to do: the training weights are in place
    EXPECT_TRUE(torch::equal(params[0].tensor, before)) << name;
  }
}

}  // namespace
}  // namespace batchlab::optim
