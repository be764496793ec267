// The fused CPU loops against the ATen-op path and against scalar references: every tail length,
// tensors spanning many chunks, float32 and float64, one vs two threads (bitwise), non-contiguous
// parameters, and the global gradient norm.
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <vector>

#include "core/optim/fused_kernels.h"
#include "core/optim/grad_clip.h"
#include "core/optim/lamb.h"
#include "core/optim/lars.h"
#include "core/optim/multi_tensor.h"

namespace batchlab::optim {
namespace {

class ThreadsGuard {
 public:
  explicit ThreadsGuard(int n) : saved_(at::get_num_threads()) { at::set_num_threads(n); }
  ~ThreadsGuard() { at::set_num_threads(saved_); }

 private:
  int saved_;
};

TEST(FusedKernels, SumsOfSquaresForEveryTailLength) {
  for (int64_t n : {0, 1, 3, 4, 7, 8, 9, 15, 16, 17, 33, 1000}) {
    std::vector<double> a(n);
    std::vector<double> b(n);
    double ra = 0.0;
    double rb = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      a[i] = 0.5 + static_cast<double>(i % 7);
      b[i] = -1.0 + 0.25 * static_cast<double>(i % 5);
      ra += a[i] * a[i];
      rb += b[i] * b[i];
    }
    EXPECT_NEAR(kernels::sum_squares(a.data(), n), ra, 1e-9 * (1.0 + ra)) << n;
    double out[2];
    kernels::sum_squares2(a.data(), b.data(), n, out);
    EXPECT_NEAR(out[0], ra, 1e-9 * (1.0 + ra)) << n;
    EXPECT_NEAR(out[1], rb, 1e-9 * (1.0 + rb)) << n;
    std::vector<float> af(a.begin(), a.end());
    EXPECT_NEAR(kernels::sum_squares(af.data(), n), ra, 1e-5 * (1.0 + ra)) << n;
  }
  EXPECT_TRUE(std::string(kernels::instruction_set()) == "avx2" ||
              std::string(kernels::instruction_set()) == "baseline");
}

TEST(FusedKernels, LarsUpdateMatchesScalarFormulaOnTails) {
  for (int64_t n : {1, 5, 8, 13}) {
    for (bool nesterov : {false, true}) {
      std::vector<double> w(n), g(n), buf(n);
      for (int64_t i = 0; i < n; ++i) {
        w[i] = 1.0 + 0.1 * static_cast<double>(i);
        g[i] = 0.3 - 0.05 * static_cast<double>(i);
        buf[i] = 0.2 * static_cast<double>(i % 3);
      }
      std::vector<double> ew = w, eb = buf;
      kernels::LarsScalars s;
      s.weight_decay = 0.01;
      s.ratio = 0.7;
      s.momentum = 0.9;
      s.in_scale = 1.0;
      s.out_scale = 0.05;
      s.nesterov = nesterov;
      for (int64_t i = 0; i < n; ++i) {
        const double d = (g[i] + 0.01 * ew[i]) * 0.7;
        eb[i] = 0.9 * eb[i] + d;
        const double u = nesterov ? d + 0.9 * eb[i] : eb[i];
        ew[i] -= 0.05 * u;
      }
      kernels::lars_update(w.data(), g.data(), buf.data(), n, s);
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_NEAR(w[i], ew[i], 1e-15) << n << " " << i;
        EXPECT_NEAR(buf[i], eb[i], 1e-15) << n << " " << i;
      }
    }
  }
}

// Parameters of awkward sizes: several chunks, a tail that is not a whole vector, a scalar.
std::vector<torch::Tensor> awkward_params(torch::ScalarType dtype) {
  torch::manual_seed(11);
  const auto o = torch::TensorOptions().dtype(dtype);
  return {torch::randn({3 * detail::kChunkElements + 5}, o), torch::randn({257, 129}, o),
          torch::randn({17}, o), torch::randn({1}, o), torch::zeros({33}, o)};
}

// Runs `steps` steps of an optimizer built by make(params, fused) and returns the parameters.
template <class Make>
std::vector<torch::Tensor> trajectory(torch::ScalarType dtype, bool fused, int threads, int steps,
                                      const Make& make) {
  ThreadsGuard guard(threads);
  std::vector<torch::Tensor> params = awkward_params(dtype);
  for (auto& p : params) p.set_requires_grad(true);
  auto opt = make(params, fused);
  torch::manual_seed(12);
  for (int s = 0; s < steps; ++s) {
    for (auto& p : params) p.mutable_grad() = torch::randn_like(p);
    params[2].mutable_grad().zero_();  // a zero gradient among the others
    opt->step();
  }
  return params;
}

std::unique_ptr<torch::optim::Optimizer> make_lars(const std::vector<torch::Tensor>& p,
                                                   bool fused) {
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(
      std::vector<torch::Tensor>{p[0], p[1], p[4]},
      std::make_unique<LarsOptions>(
          LarsOptions(2.0).momentum(0.9).weight_decay(1e-4).nesterov(true).trust_clip(true).fused(
              fused)));
  groups.emplace_back(
      std::vector<torch::Tensor>{p[2], p[3]},
      std::make_unique<LarsOptions>(
          LarsOptions(2.0).momentum(0.9).adapt(false).lr_in_momentum(true).fused(fused)));
  return std::make_unique<Lars>(groups);
}

std::unique_ptr<torch::optim::Optimizer> make_lamb(const std::vector<torch::Tensor>& p,
                                                   bool fused) {
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(
      std::vector<torch::Tensor>{p[0], p[1], p[4]},
      std::make_unique<LambOptions>(LambOptions(0.01).weight_decay(0.01).fused(fused)));
  groups.emplace_back(std::vector<torch::Tensor>{p[2], p[3]},
                      std::make_unique<LambOptions>(LambOptions(0.01).adapt(false).fused(fused)));
  return std::make_unique<Lamb>(groups, LambOptions(0.01).max_grad_norm(1.0));
}

void expect_close(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b,
                  double rtol, double atol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::allclose(a[i], b[i], rtol, atol))
        << "param " << i << " max diff " << (a[i] - b[i]).abs().max().item<double>();
  }
}

void expect_equal(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << "param " << i;
}

TEST(FusedPaths, LarsFusedMatchesAtenInBothDtypes) {
  expect_close(trajectory(torch::kFloat64, true, 1, 4, make_lars),
               trajectory(torch::kFloat64, false, 1, 4, make_lars), 1e-12, 1e-14);
  expect_close(trajectory(torch::kFloat32, true, 1, 4, make_lars),
               trajectory(torch::kFloat32, false, 1, 4, make_lars), 1e-4, 1e-6);
}

TEST(FusedPaths, LambFusedMatchesAtenInBothDtypes) {
  expect_close(trajectory(torch::kFloat64, true, 1, 4, make_lamb),
               trajectory(torch::kFloat64, false, 1, 4, make_lamb), 1e-12, 1e-14);
  expect_close(trajectory(torch::kFloat32, true, 1, 4, make_lamb),
               trajectory(torch::kFloat32, false, 1, 4, make_lamb), 1e-4, 1e-6);
}

TEST(FusedPaths, ThreadCountDoesNotChangeABit) {
  expect_equal(trajectory(torch::kFloat32, true, 1, 3, make_lars),
               trajectory(torch::kFloat32, true, 2, 3, make_lars));
  expect_equal(trajectory(torch::kFloat32, true, 1, 3, make_lamb),
               trajectory(torch::kFloat32, true, 2, 3, make_lamb));
}

TEST(FusedPaths, NonContiguousParametersTakeTheRightPath) {
  // Transposed (dense, non-contiguous) and strided (non-dense) parameters against contiguous
  // copies.
  for (bool lamb : {false, true}) {
    torch::manual_seed(21);
    torch::Tensor base = torch::randn({24, 40});
    torch::Tensor transposed = base.t().detach();  // dense, but not contiguous
    torch::Tensor strided = torch::randn({30, 16}).slice(1, 0, 16, 2).detach();
    std::vector<torch::Tensor> odd = {transposed.set_requires_grad(true),
                                      strided.set_requires_grad(true)};
    std::vector<torch::Tensor> plain = {odd[0].detach().contiguous().set_requires_grad(true),
                                        odd[1].detach().contiguous().set_requires_grad(true)};
    ASSERT_FALSE(odd[0].is_contiguous());
    ASSERT_TRUE(odd[0].is_non_overlapping_and_dense());
    ASSERT_FALSE(odd[1].is_non_overlapping_and_dense());
    std::unique_ptr<torch::optim::Optimizer> a;
    std::unique_ptr<torch::optim::Optimizer> b;
    if (lamb) {
      a = std::make_unique<Lamb>(odd, LambOptions(0.01).weight_decay(0.01));
      b = std::make_unique<Lamb>(plain, LambOptions(0.01).weight_decay(0.01));
    } else {
      a = std::make_unique<Lars>(odd, LarsOptions(1.0).weight_decay(1e-4));
      b = std::make_unique<Lars>(plain, LarsOptions(1.0).weight_decay(1e-4));
    }
    for (int s = 0; s < 3; ++s) {
      for (size_t i = 0; i < odd.size(); ++i) {
        torch::Tensor g = torch::randn(odd[i].sizes());
        odd[i].mutable_grad() = torch::empty_like(odd[i]).copy_(g);  // same strides as the param
        plain[i].mutable_grad() = g.contiguous();
      }
      a->step();
      b->step();
    }
    for (size_t i = 0; i < odd.size(); ++i) {
      EXPECT_TRUE(torch::allclose(odd[i], plain[i], 1e-5, 1e-6)) << "lamb " << lamb << " " << i;
    }
  }
}

TEST(GradClip, GlobalNormOnHostAndClipping) {
  std::vector<torch::Tensor> p = {torch::zeros({2}).set_requires_grad(true),
                                  torch::zeros({1, 1}).set_requires_grad(true),
                                  torch::zeros({3}).set_requires_grad(true)};
  p[0].mutable_grad() = torch::tensor({3.0f, 0.0f});
  p[1].mutable_grad() = torch::full({1, 1}, 4.0f);
  // p[2] has no gradient: skipped.
  const GradNorm n = global_grad_norm(p);
  ASSERT_TRUE(n.host.has_value());
  EXPECT_DOUBLE_EQ(*n.host, 5.0);
  EXPECT_DOUBLE_EQ(n.norm.item<double>(), 5.0);
  const GradNorm before = clip_grad_norm(p, 2.5);  // factor 2
  EXPECT_DOUBLE_EQ(*before.host, 5.0);
  EXPECT_TRUE(torch::allclose(p[0].grad(), torch::tensor({1.5f, 0.0f})));
  EXPECT_FLOAT_EQ(p[1].grad().item<float>(), 2.0f);
  const GradNorm again = clip_grad_norm(p, 10.0);  // below the threshold: unchanged
  EXPECT_DOUBLE_EQ(*again.host, 2.5);
  EXPECT_FLOAT_EQ(p[1].grad().item<float>(), 2.0f);
  EXPECT_FALSE(global_grad_norm({p[2]}).norm.defined());
}

TEST(GradClip, NonFusableGradientsUseDeviceTensors) {
  std::vector<torch::Tensor> p = {torch::zeros({2}, torch::kBFloat16).set_requires_grad(true)};
  p[0].mutable_grad() = torch::tensor({3.0, 4.0}).to(torch::kBFloat16);
  const GradNorm n = clip_grad_norm(p, 1.0);
  EXPECT_FALSE(n.host.has_value());
  EXPECT_NEAR(n.norm.item<double>(), 5.0, 1e-6);
  EXPECT_NEAR(p[0].grad()[1].item<double>(), 0.8, 1e-2);
}

}  // namespace
}  // namespace batchlab::optim
