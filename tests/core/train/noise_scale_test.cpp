// Gradient noise scale on a problem with a known answer. Linear regression y = x.w* + sigma*eps
// with x ~ N(0, I_d) and loss 0.5 (x.w - y)^2: at weights w = w* + delta the per-example gradient
// is x (x.delta - sigma eps), so G = delta and, by Isserlis' theorem,
//   Sigma = (|delta|^2 + sigma^2) I + delta delta^T,  tr(Sigma) = d (|delta|^2 + sigma^2) +
//   |delta|^2.
// With d = 10, |delta|^2 = 1, sigma = 1: |G|^2 = 1, tr(Sigma) = 21, B_simple = 21.
#include "core/train/noise_scale.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/errors.h"
#include "core/optim/grad_clip.h"
#include "core/train/trainer.h"

namespace batchlab::train {
namespace {

class LinearRegressionTask : public Task {
 public:
  LinearRegressionTask(int64_t n, int64_t d, double sigma)
      : net_(torch::nn::LinearOptions(d, 1).bias(false)) {
    torch::manual_seed(123);
    net_->to(torch::kFloat64);
    auto w_star = torch::randn({d}, torch::kFloat64);
    auto delta = torch::randn({d}, torch::kFloat64);
    delta = delta / delta.norm();  // |delta|^2 = 1
    {
      torch::NoGradGuard g;
      net_->weight.copy_((w_star + delta).view({1, d}));
    }
    x_ = torch::randn({n, d}, torch::kFloat64);
    y_ = x_.matmul(w_star) + sigma * torch::randn({n}, torch::kFloat64);
  }
  torch::nn::Module& model() override { return *net_; }
  int64_t size(Split) const override { return x_.size(0); }
  Batch make_batch(Split, const torch::Tensor& idx, std::optional<uint64_t>) override {
    return {x_.index_select(0, idx), y_.index_select(0, idx), idx.size(0), {}};
  }
  BatchOutput forward(const Batch& b) override {
    auto residual = net_->forward(b.inputs).squeeze(1) - b.targets;
    return {0.5 * residual.pow(2).mean(), torch::zeros({}), b.size};
  }

 private:
  torch::nn::Linear net_;
  torch::Tensor x_, y_;
};

TEST(NoiseScale, EstimatorIsExactOnExactInputs) {
  // Feed the expectations themselves: E|G_b|^2 = |G|^2 + tr/b.
  NoiseScaleEstimator est(0.0);
  const double g2 = 2.0, tr = 50.0;
  auto e = est.update({g2 + tr / 8, g2 + tr / 8}, 8, g2 + tr / 64, 64);
  EXPECT_NEAR(e.g2, g2, 1e-12);
  EXPECT_NEAR(e.trace_sigma, tr, 1e-9);
  EXPECT_NEAR(e.b_simple, 25.0, 1e-9);
  EXPECT_THROW(est.update({1.0}, 8, 1.0, 8),
               batchlab::Error);  // no accumulation: nothing to compare
}

TEST(NoiseScale, LinearRegressionMatchesClosedForm) {
  const int64_t d = 10, micro = 32, accum = 8, steps = 600;
  LinearRegressionTask task(micro * accum * steps, d, 1.0);
  auto params = task.named_parameters();
  NoiseScaleEstimator est(0.99);
  NoiseScaleEstimate e;
  for (int64_t s = 0; s < steps; ++s) {
    for (auto& p : params) p.tensor.mutable_grad() = torch::Tensor();
    std::vector<torch::Tensor> micro_idx;
    for (int64_t j = 0; j < accum; ++j) {
      micro_idx.push_back(
          torch::arange((s * accum + j) * micro, (s * accum + j + 1) * micro, torch::kInt64));
    }
    std::vector<double> sq;
    accumulate_gradients(task, micro_idx, std::nullopt, &params, &sq);
    ASSERT_EQ(sq.size(), static_cast<size_t>(accum));
    std::vector<torch::Tensor> tensors;
    for (const auto& p : params) tensors.push_back(p.tensor);
    const double big = *optim::global_grad_norm(tensors).host;
    e = est.update(sq, micro, big * big, micro * accum);
  }
  const double truth = (d * (1.0 + 1.0) + 1.0) / 1.0;  // 21
  EXPECT_NEAR(e.b_simple, truth, 0.10 * truth) << "g2 " << e.g2 << " tr " << e.trace_sigma;
  EXPECT_NEAR(e.g2, 1.0, 0.15);
  EXPECT_NEAR(e.trace_sigma, 21.0, 0.10 * 21.0);
}

TEST(NoiseScale, MicroNormsDoNotDisturbAccumulation) {
  LinearRegressionTask a(256, 4, 1.0), b(256, 4, 1.0);
  auto idx = torch::arange(256, torch::kInt64);
  std::vector<torch::Tensor> micro;
  for (int j = 0; j < 4; ++j) micro.push_back(idx.slice(0, 64 * j, 64 * (j + 1)));
  auto pa = a.named_parameters(), pb = b.named_parameters();
  std::vector<double> sq;
  accumulate_gradients(a, micro, std::nullopt, &pa, &sq);
  accumulate_gradients(b, micro, std::nullopt);
  EXPECT_TRUE(torch::allclose(pa[0].tensor.grad(), pb[0].tensor.grad(), 1e-12, 1e-14));
  // Each micro-batch norm equals that of its gradient computed alone.
  for (int j = 0; j < 4; ++j) {
    LinearRegressionTask c(256, 4, 1.0);
    accumulate_gradients(c, {micro[j]}, std::nullopt);
    EXPECT_NEAR(sq[j], c.named_parameters()[0].tensor.grad().pow(2).sum().item<double>(), 1e-10);
  }
}

// The noise-scale measurement is bracketed by measure_begin / measure_end (the trainer pauses the
// training clock there), and the training itself (batches, forward, backward) never is.
class WatchedTask : public LinearRegressionTask {
 public:
  using LinearRegressionTask::LinearRegressionTask;
  bool measuring = false;
  int trained_while_measuring = 0;
  Batch make_batch(Split s, const torch::Tensor& idx, std::optional<uint64_t> seed) override {
    trained_while_measuring += measuring ? 1 : 0;
    return LinearRegressionTask::make_batch(s, idx, seed);
  }
  BatchOutput forward(const Batch& b) override {
    trained_while_measuring += measuring ? 1 : 0;
    return LinearRegressionTask::forward(b);
  }
};

TEST(NoiseScale, MeasurementIsBracketedForTheClockAndTrainingIsNot) {
  WatchedTask task(256, 4, 1.0);
  auto idx = torch::arange(256, torch::kInt64);
  std::vector<torch::Tensor> micro;
  for (int j = 0; j < 4; ++j) micro.push_back(idx.slice(0, 64 * j, 64 * (j + 1)));
  auto params = task.named_parameters();
  int begins = 0, ends = 0;
  AccumulationHooks hooks;
  hooks.measure_begin = [&] {
    EXPECT_FALSE(task.measuring) << "measurement scopes must not nest";
    task.measuring = true;
    ++begins;
  };
  hooks.measure_end = [&] {
    task.measuring = false;
    ++ends;
  };
  std::vector<double> sq;
  accumulate_gradients(task, micro, std::nullopt, &params, &sq, &hooks);
  EXPECT_EQ(sq.size(), 4u);
  // Per micro-batch: the copy before its backward and the norm after it; then the host read.
  EXPECT_EQ(begins, 2 * 4 + 1);
  EXPECT_EQ(ends, begins);
  EXPECT_EQ(task.trained_while_measuring, 0);
  // Without the measurement nothing is bracketed.
  begins = 0;
  accumulate_gradients(task, micro, std::nullopt, nullptr, nullptr, &hooks);
  EXPECT_EQ(begins, 0);
}

}  // namespace
}  // namespace batchlab::train
