// optim.implementation through the real factory: "auto" (fused CPU loops), "foreach" (the GPU's
// multi-tensor path) and "per_tensor" give the same LARS and LAMB trajectories with the default
// exclusions (ndim<2: biases and norm scales in a no-decay, non-adapted group), a [[optim.groups]]
// rule with its own LR scale, and global clipping; their trust ratios agree too.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "core/config/optim_config.h"
#include "core/optim/factory.h"

namespace batchlab::optim {
namespace {

std::vector<NamedParameter> impl_params() {
  torch::manual_seed(51);
  std::vector<NamedParameter> out = {{"conv.weight", torch::randn({8, 3, 3, 3}, torch::kFloat64)},
                                     {"bn.weight", torch::ones({8}, torch::kFloat64)},
                                     {"bn.bias", torch::zeros({8}, torch::kFloat64)},
                                     {"fc.weight", torch::randn({10, 8}, torch::kFloat64)},
                                     {"fc.bias", torch::randn({10}, torch::kFloat64)}};
  for (auto& p : out) p.tensor.set_requires_grad(true);
  return out;
}

struct ImplRun {
  std::vector<torch::Tensor> params;
  std::vector<torch::Tensor> trust;
};

ImplRun impl_run(const std::string& name, const std::string& implementation) {
  config::OptimConfig c;
  c.name = name;
  c.implementation = implementation;
  c.weight_decay = 1e-3;
  c.grad_clip = 0.5;
  c.eps = name == "lamb" ? 1e-6 : 1e-8;
  config::ParamGroupRule head;
  head.match = "fc.*";
  head.lr_scale = 0.5;
  c.groups = {head};
  ImplRun run;
  std::vector<NamedParameter> params = impl_params();
  auto opt = make_optimizer(c, params, 0.1);
  torch::manual_seed(52);
  for (int s = 0; s < 4; ++s) {
    for (auto& p : params) p.tensor.mutable_grad() = torch::randn_like(p.tensor);
    opt->step(opt->grad_norm());
  }
  for (auto& p : params) run.params.push_back(p.tensor.detach());
  for (const auto& t : opt->last_trust_ratios()) run.trust.push_back(t.defined() ? t.cpu() : t);
  return run;
}

TEST(OptimImplementation, AllThreeAgreeThroughTheFactory) {
  for (const std::string name : {"lars", "lamb"}) {
    const ImplRun fused = impl_run(name, "auto");
    for (const std::string impl : {"foreach", "per_tensor"}) {
      SCOPED_TRACE(name + " " + impl);
      const ImplRun other = impl_run(name, impl);
      for (size_t i = 0; i < fused.params.size(); ++i) {
        EXPECT_TRUE(torch::allclose(fused.params[i], other.params[i], 1e-12, 1e-14)) << i;
        ASSERT_EQ(fused.trust[i].defined(), other.trust[i].defined()) << i;
        if (fused.trust[i].defined()) {
          EXPECT_NEAR(fused.trust[i].item<double>(), other.trust[i].item<double>(),
                      1e-12 * std::abs(fused.trust[i].item<double>()))
              << i;
        }
      }
      // The exclusions: biases and norm scales were not adapted (no trust ratio).
      EXPECT_FALSE(other.trust[1].defined());
      EXPECT_FALSE(other.trust[2].defined());
      EXPECT_TRUE(other.trust[0].defined());
    }
  }
}

}  // namespace
}  // namespace batchlab::optim
