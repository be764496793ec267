// LAMB's multi-tensor (`_foreach_*`) path on CPU tensors, forced with fused(false): against the
// fused CPU loops and the per-tensor ATen path (parameter groups, exclusions as a non-adapted
// group, clipping with a host or a device factor, trust clipping, bias correction off), its trust
// ratios, the number of operators a step dispatches (independent of the number of tensors), and
// its one host read per step. The golden trajectories run it too (golden_test.cpp).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <memory>
#include <vector>

#include "core/optim/grad_clip.h"
#include "core/optim/host_reads.h"
#include "core/optim/lamb.h"
#include "core/optim/multi_tensor.h"
#include "tests/op_counter.h"

namespace batchlab::optim {
namespace {

enum class LambPath { fused, foreach, per_tensor };

// `count` tensors of mixed sizes (one spanning several fused chunks, a scalar, an all-zero one).
std::vector<torch::Tensor> lamb_params(torch::ScalarType dtype, int count) {
  torch::manual_seed(31);
  const auto o = torch::TensorOptions().dtype(dtype);
  std::vector<torch::Tensor> out = {torch::randn({2 * detail::kChunkElements + 3}, o),
                                    torch::randn({65, 33}, o), torch::randn({17}, o),
                                    torch::randn({1}, o), torch::zeros({9}, o)};
  while (static_cast<int>(out.size()) < count) out.push_back(torch::randn({7, 5}, o));
  out.resize(static_cast<size_t>(count));
  for (auto& p : out) p.set_requires_grad(true);
  return out;
}

// Two groups, as the factory builds them: the decay group (adapted) and the excluded one.
std::unique_ptr<Lamb> lamb_over(const std::vector<torch::Tensor>& p, LambPath path,
                                const LambOptions& base) {
  const bool fused = path == LambPath::fused;
  const bool foreach = path != LambPath::per_tensor;
  std::vector<torch::Tensor> decay;
  std::vector<torch::Tensor> excluded;
  for (size_t i = 0; i < p.size(); ++i) (i % 3 == 2 ? excluded : decay).push_back(p[i]);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay,
                      std::make_unique<LambOptions>(
                          LambOptions(base).weight_decay(0.01).fused(fused).foreach (foreach)));
  groups.emplace_back(
      excluded,
      std::make_unique<LambOptions>(
          LambOptions(base).weight_decay(0.0).adapt(false).fused(fused).foreach (foreach)));
  return std::make_unique<Lamb>(groups, LambOptions(base).fused(fused).foreach (foreach));
}

struct LambRun {
  std::vector<torch::Tensor> params;
  std::vector<torch::Tensor> trust;  // after the last step, undefined where not adapted
};

// `steps` steps with gradients of scale `grad_scale` (large: clipping acts).
LambRun lamb_run(LambPath path, torch::ScalarType dtype, const LambOptions& base, int steps,
                 double grad_scale = 1.0, bool device_norm = false) {
  LambRun run;
  run.params = lamb_params(dtype, 5);
  auto opt = lamb_over(run.params, path, base);
  torch::manual_seed(32);
  for (int s = 0; s < steps; ++s) {
    for (auto& p : run.params) p.mutable_grad() = torch::randn_like(p) * grad_scale;
    run.params[2].mutable_grad().zero_();
    if (device_norm) {
      opt->step_with_grad_norm(global_grad_norm(run.params, /*on_host=*/false));
    } else {
      opt->step();
    }
  }
  for (auto& p : run.params) {
    const at::Tensor t = opt->trust_ratio(p);
    run.trust.push_back(t.defined() ? t.to(torch::kCPU) : t);
  }
  return run;
}

void expect_runs_close(const LambRun& a, const LambRun& b, double rtol, double atol) {
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

TEST(ForeachLamb, MatchesFusedAndPerTensorInBothDtypes) {
  const LambOptions base = LambOptions(0.01).max_grad_norm(1.0);
  for (double scale : {1.0, 1e-3}) {  // clipping acts at scale 1 (norm ~ 400), not at 1e-3
    const LambRun fused = lamb_run(LambPath::fused, torch::kFloat64, base, 4, scale);
    expect_runs_close(fused, lamb_run(LambPath::foreach, torch::kFloat64, base, 4, scale), 1e-12,
                      1e-14);
    expect_runs_close(fused, lamb_run(LambPath::per_tensor, torch::kFloat64, base, 4, scale), 1e-12,
                      1e-14);
    expect_runs_close(lamb_run(LambPath::fused, torch::kFloat32, base, 4, scale),
                      lamb_run(LambPath::foreach, torch::kFloat32, base, 4, scale), 1e-4, 1e-6);
  }
}

TEST(ForeachLamb, OptionVariantsMatchFused) {
  const std::vector<LambOptions> variants = {
      LambOptions(0.02).max_grad_norm(0.0).bias_correction(false),
      LambOptions(0.02).trust_clip(true).always_adapt(true),
      LambOptions(0.02).grad_averaging(false).betas(std::make_tuple(0.8, 0.99)).eps(1e-8),
  };
  for (size_t v = 0; v < variants.size(); ++v) {
    SCOPED_TRACE(v);
    expect_runs_close(lamb_run(LambPath::fused, torch::kFloat64, variants[v], 3),
                      lamb_run(LambPath::foreach, torch::kFloat64, variants[v], 3), 1e-12, 1e-14);
  }
}

TEST(ForeachLamb, DeviceSideClipFactorGivesTheSameUpdate) {
  // On a GPU the clip factor is a device tensor (reading it would be a host read).
  const LambOptions base = LambOptions(0.01).max_grad_norm(1.0);
  expect_runs_close(lamb_run(LambPath::foreach, torch::kFloat64, base, 3),
                    lamb_run(LambPath::foreach, torch::kFloat64, base, 3, 1.0, true), 1e-12, 1e-14);
}

// Operators dispatched and host reads of one step over `count` tensors.
struct StepCost {
  int64_t ops = 0;
  int64_t reads = 0;
  int64_t implicit_reads = 0;
};
StepCost lamb_step_cost(LambPath path, int count) {
  std::vector<torch::Tensor> params = lamb_params(torch::kFloat32, count);
  auto opt = lamb_over(params, path, LambOptions(0.01).max_grad_norm(1.0));
  for (int s = 0; s < 2; ++s) {  // the first step allocates the state: measure the second
    for (auto& p : params) p.mutable_grad() = torch::ones_like(p);
    const int64_t reads = host_reads();
    test_util::OpCounter counter;
    opt->step_with_grad_norm(global_grad_norm(params, /*on_host=*/false));
    if (s == 1) return {counter.ops(), host_reads() - reads, counter.implicit_reads()};
  }
  return {};
}

TEST(ForeachLamb, OperatorsPerStepDoNotGrowWithTheTensorCount) {
  const StepCost few = lamb_step_cost(LambPath::foreach, 6);
  const StepCost many = lamb_step_cost(LambPath::foreach, 60);
  RecordProperty("ops_per_step_2_groups", static_cast<int>(few.ops));
  std::cout << "foreach LAMB step, 2 groups: " << few.ops << " ops for 6 tensors, " << many.ops
            << " for 60\n";
  EXPECT_EQ(few.ops, many.ops);
  EXPECT_LE(many.ops, 50);  // foreach_lamb.h: about 20 x buckets + 6
  EXPECT_EQ(few.reads, 1);  // the trust ratios' norms, read once
  EXPECT_EQ(many.reads, 1);
  EXPECT_EQ(many.implicit_reads, 0);
  // The per-tensor path: the count grows with the tensors (about 10 ops each on a GPU).
  const StepCost per_tensor = lamb_step_cost(LambPath::per_tensor, 60);
  std::cout << "per-tensor LAMB step: " << per_tensor.ops << " ops for 60 tensors\n";
  EXPECT_GE(per_tensor.ops, 10 * 60);
}

}  // namespace
}  // namespace batchlab::optim
