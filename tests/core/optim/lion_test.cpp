// Lion (core/optim/lion.h): the update by hand, the multi-tensor path against the per-tensor one
// (same bits), its operator count independent of the number of tensors, and a state round trip.
#include "core/optim/lion.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <sstream>
#include <vector>

#include "core/errors.h"
#include "tests/core/optim/optim_test_util.h"
#include "tests/op_counter.h"

namespace batchlab::optim {
namespace {

using test_util::leaf;

TEST(Lion, OneStepByHand) {
  torch::Tensor w = leaf({1.0, -2.0, 0.5});
  Lion opt({w}, LionOptions(0.1).betas(std::make_tuple(0.9, 0.99)).weight_decay(0.1));
  w.mutable_grad() = torch::tensor({0.1, -0.3, 0.0}, torch::kFloat64);
  opt.step();
  // w * (1 - 0.1 * 0.1) - 0.1 * sign(0.1 * g): the zero-gradient entry only decays.
  EXPECT_TRUE(torch::allclose(w, torch::tensor({0.99 - 0.1, -1.98 + 0.1, 0.495}, torch::kFloat64),
                              0.0, 1e-15));
  // m = 0.01 * g, taken after the update.
  EXPECT_TRUE(torch::allclose(opt.param_state(w)->exp_avg(),
                              torch::tensor({0.001, -0.003, 0.0}, torch::kFloat64), 0.0, 1e-17));
  // Second step: c = sign(0.9 * m + 0.1 * g) with g opposite to m's sign in entry 0.
  w.mutable_grad() = torch::tensor({-0.005, -0.3, 1.0}, torch::kFloat64);
  opt.step();
  // 0.9 * 0.001 + 0.1 * -0.005 = 0.0004 > 0: entry 0 still moves down.
  EXPECT_NEAR(w[0].item<double>(), 0.89 * 0.99 - 0.1, 1e-15);
  EXPECT_NEAR(w[2].item<double>(), 0.495 * 0.99 - 0.1, 1e-15);
}

// Mixed shapes and dtypes over two groups (one without decay): several buckets.
std::vector<torch::Tensor> lion_params(int count) {
  torch::manual_seed(3);
  std::vector<torch::Tensor> out;
  for (int i = 0; i < count; ++i) {
    const auto dtype = i % 3 == 2 ? torch::kFloat64 : torch::kFloat32;
    out.push_back(torch::randn({3 + i % 4, 5}, dtype).set_requires_grad(true));
  }
  return out;
}

std::unique_ptr<Lion> make_lion(const std::vector<torch::Tensor>& p, bool foreach) {
  const size_t half = p.size() / 2;
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(
      std::vector<torch::Tensor>(p.begin(), p.begin() + half),
      std::make_unique<LionOptions>(LionOptions(1e-3).weight_decay(0.5).foreach (foreach)));
  groups.emplace_back(std::vector<torch::Tensor>(p.begin() + half, p.end()),
                      std::make_unique<LionOptions>(LionOptions(1e-3).foreach (foreach)));
  return std::make_unique<Lion>(groups, LionOptions(1e-3).foreach (foreach));
}

void lion_grads(const std::vector<torch::Tensor>& p, int step) {
  torch::manual_seed(100 + step);
  for (const auto& t : p) t.mutable_grad() = torch::randn_like(t);
}

TEST(Lion, ForeachEqualsPerTensorBitForBit) {
  auto a = lion_params(7);
  auto b = lion_params(7);
  auto fa = make_lion(a, true);
  auto fb = make_lion(b, false);
  for (int s = 0; s < 4; ++s) {
    lion_grads(a, s);
    lion_grads(b, s);
    fa->step();
    fb->step();
  }
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::equal(a[i], b[i])) << i;
    EXPECT_FALSE(torch::equal(a[i], lion_params(7)[i])) << "parameter " << i << " never moved";
  }
}

int64_t lion_ops_per_step(int count) {
  auto p = lion_params(count);
  auto opt = make_lion(p, true);
  lion_grads(p, 0);
  opt->step();  // allocates the state
  batchlab::test_util::OpCounter counter;
  opt->step();
  return counter.ops();
}

TEST(Lion, ForeachOpsDoNotGrowWithTheTensors) {
  const int64_t few = lion_ops_per_step(6);
  const int64_t many = lion_ops_per_step(60);
  EXPECT_EQ(few, many);
  // Two groups x two dtypes = 4 buckets, 6 ops each, +1 decay multiply in the decayed group's 2.
  EXPECT_EQ(few, 4 * 6 + 2);
  RecordProperty("lion_ops_per_step", static_cast<int>(few));
}

TEST(Lion, StateRoundTripContinuesTheSameTrajectory) {
  auto a = lion_params(4);
  auto b = lion_params(4);
  auto fa = make_lion(a, true);
  auto fb = make_lion(b, true);
  lion_grads(a, 0);
  fa->step();
  std::stringstream buffer;
  {
    torch::serialize::OutputArchive out;
    fa->save(out);
    out.save_to(buffer);
  }
  for (size_t i = 0; i < a.size(); ++i) b[i].detach().copy_(a[i].detach());
  {
    torch::serialize::InputArchive in;
    in.load_from(buffer);
    fb->load(in);
  }
  lion_grads(a, 1);
  lion_grads(b, 1);
  fa->step();
  fb->step();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << i;
}

TEST(Lion, RejectsBadOptions) {
  torch::Tensor w = leaf({1.0});
  EXPECT_THROW(Lion({w}, LionOptions(-1.0)), Error);
  EXPECT_THROW(Lion({w}, LionOptions(1e-4).betas(std::make_tuple(0.9, 1.0))), Error);
  EXPECT_THROW(Lion({w}, LionOptions(1e-4).weight_decay(-0.1)), Error);
}

}  // namespace
}  // namespace batchlab::optim
