// LARS's multi-tensor (`_foreach_*`) path on CPU tensors, forced with fused(false): against the
// fused CPU loops and the per-tensor ATen path, for both momentum forms (LR outside and inside the
// buffer, with an LR that changes), Nesterov, LARC, no momentum, parameter groups with an excluded
// (non-adapted) group; its trust ratios, operators per step and host reads. The golden trajectories
// run it too (golden_test.cpp).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <memory>
#include <vector>

#include "core/optim/host_reads.h"
#include "core/optim/lars.h"
#include "core/optim/multi_tensor.h"
#include "tests/op_counter.h"

namespace batchlab::optim {
namespace {

enum class LarsPath { fused, foreach, per_tensor };

std::vector<torch::Tensor> lars_params(torch::ScalarType dtype, int count) {
  torch::manual_seed(41);
  const auto o = torch::TensorOptions().dtype(dtype);
  std::vector<torch::Tensor> out = {torch::randn({2 * detail::kChunkElements + 5}, o),
                                    torch::randn({31, 65}, o), torch::randn({13}, o),
                                    torch::randn({1}, o), torch::zeros({11}, o)};
  while (static_cast<int>(out.size()) < count) out.push_back(torch::randn({5, 7}, o));
  out.resize(static_cast<size_t>(count));
  for (auto& p : out) p.set_requires_grad(true);
  return out;
}

std::unique_ptr<Lars> lars_over(const std::vector<torch::Tensor>& p, LarsPath path,
                                const LarsOptions& base) {
  const bool fused = path == LarsPath::fused;
  const bool foreach = path != LarsPath::per_tensor;
  std::vector<torch::Tensor> decay;
  std::vector<torch::Tensor> excluded;
  for (size_t i = 0; i < p.size(); ++i) (i % 3 == 2 ? excluded : decay).push_back(p[i]);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay,
                      std::make_unique<LarsOptions>(
                          LarsOptions(base).weight_decay(1e-4).fused(fused).foreach (foreach)));
  groups.emplace_back(
      excluded,
      std::make_unique<LarsOptions>(
          LarsOptions(base).weight_decay(0.0).adapt(false).fused(fused).foreach (foreach)));
  return std::make_unique<Lars>(groups, LarsOptions(base).fused(fused).foreach (foreach));
}

struct LarsRun {
  std::vector<torch::Tensor> params;
  std::vector<torch::Tensor> trust;
};

// `steps` steps; the LR changes every step, so the two momentum forms differ.
LarsRun lars_run(LarsPath path, torch::ScalarType dtype, const LarsOptions& base, int steps) {
  LarsRun run;
  run.params = lars_params(dtype, 5);
  auto opt = lars_over(run.params, path, base);
  torch::manual_seed(42);
  for (int s = 0; s < steps; ++s) {
    for (auto& g : opt->param_groups()) g.options().set_lr(base.lr() * (1.0 + 0.5 * s));
    for (auto& p : run.params) p.mutable_grad() = torch::randn_like(p);
    run.params[1].mutable_grad().zero_();  // a zero gradient: ratio 1
    opt->step();
  }
  for (auto& p : run.params) {
    const at::Tensor t = opt->trust_ratio(p);
    run.trust.push_back(t.defined() ? t.to(torch::kCPU) : t);
  }
  return run;
}

void expect_lars_close(const LarsRun& a, const LarsRun& b, double rtol, double atol) {
  ASSERT_EQ(a.params.size(), b.params.size());
  for (size_t i = 0; i < a.params.size(); ++i) {
    EXPECT_TRUE(torch::allclose(a.params[i], b.params[i], rtol, atol))
        << "param " << i << " max diff " << (a.params[i] - b.params[i]).abs().max().item<double>();
    ASSERT_EQ(a.trust[i].defined(), b.trust[i].defined()) << "param " << i;
    if (a.trust[i].defined()) {
      EXPECT_NEAR(a.trust[i].item<double>(), b.trust[i].item<double>(),
                  rtol * std::abs(a.trust[i].item<double>()))
          << "trust ratio of param " << i;
    }
  }
}

TEST(ForeachLars, EveryFormMatchesFusedAndPerTensor) {
  const std::vector<LarsOptions> variants = {
      LarsOptions(0.5),                                             // PyTorch/timm form
      LarsOptions(0.5).lr_in_momentum(true),                        // paper/MLPerf form
      LarsOptions(0.5).nesterov(true),                              // Nesterov
      LarsOptions(0.5).nesterov(true).lr_in_momentum(true),         // both
      LarsOptions(2.0).trust_clip(true),                            // LARC
      LarsOptions(0.5).momentum(0.0),                               // no buffer
      LarsOptions(0.5).always_adapt(true).trust_coefficient(0.02),  // the excluded group adapted
  };
  for (size_t v = 0; v < variants.size(); ++v) {
    SCOPED_TRACE(v);
    const LarsRun fused = lars_run(LarsPath::fused, torch::kFloat64, variants[v], 4);
    expect_lars_close(fused, lars_run(LarsPath::foreach, torch::kFloat64, variants[v], 4), 1e-12,
                      1e-14);
    expect_lars_close(fused, lars_run(LarsPath::per_tensor, torch::kFloat64, variants[v], 4), 1e-12,
                      1e-14);
    expect_lars_close(lars_run(LarsPath::fused, torch::kFloat32, variants[v], 4),
                      lars_run(LarsPath::foreach, torch::kFloat32, variants[v], 4), 1e-4, 1e-6);
  }
}

TEST(ForeachLars, GradientsAreNotModified) {
  std::vector<torch::Tensor> params = lars_params(torch::kFloat64, 5);
  auto opt = lars_over(params, LarsPath::foreach, LarsOptions(0.5).nesterov(true));
  std::vector<torch::Tensor> grads;
  for (auto& p : params) {
    p.mutable_grad() = torch::randn_like(p);
    grads.push_back(p.grad().clone());
  }
  opt->step();
  opt->step();
  for (size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(torch::equal(params[i].grad(), grads[i]));
}

struct LarsCost {
  int64_t ops = 0;
  int64_t reads = 0;
  int64_t implicit_reads = 0;
};
LarsCost lars_step_cost(LarsPath path, int count) {
  std::vector<torch::Tensor> params = lars_params(torch::kFloat32, count);
  auto opt = lars_over(params, path, LarsOptions(0.5).nesterov(true));
  for (int s = 0; s < 2; ++s) {  // the first step allocates the buffers: measure the second
    for (auto& p : params) p.mutable_grad() = torch::ones_like(p);
    const int64_t reads = host_reads();
    test_util::OpCounter counter;
    opt->step();
    if (s == 1) return {counter.ops(), host_reads() - reads, counter.implicit_reads()};
  }
  return {};
}

TEST(ForeachLars, OperatorsPerStepDoNotGrowWithTheTensorCount) {
  const LarsCost few = lars_step_cost(LarsPath::foreach, 6);
  const LarsCost many = lars_step_cost(LarsPath::foreach, 60);
  std::cout << "foreach LARS step (Nesterov), 2 groups: " << few.ops << " ops for 6 tensors, "
            << many.ops << " for 60\n";
  EXPECT_EQ(few.ops, many.ops);
  EXPECT_LE(many.ops, 25);  // foreach_lars.h: about 10 x buckets + 4
  EXPECT_EQ(few.reads, 1);
  EXPECT_EQ(many.reads, 1);
  EXPECT_EQ(many.implicit_reads, 0);
  const LarsCost per_tensor = lars_step_cost(LarsPath::per_tensor, 60);
  std::cout << "per-tensor LARS step: " << per_tensor.ops << " ops for 60 tensors\n";
  EXPECT_GE(per_tensor.ops, 4 * 60);
}

}  // namespace
}  // namespace batchlab::optim
