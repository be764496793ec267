// Muon's Newton-Schulz iteration (core/optim/newton_schulz.h).
#include "core/optim/newton_schulz.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/errors.h"

namespace batchlab::optim {
namespace {

// Singular values pushed into Newton-Schulz's band (about [0.7, 1.2] after 5 steps), for wide,
// tall and near-square inputs (a square Gaussian matrix can have a singular value too small
// for 5 steps to lift), in both dtypes; the result keeps the input's shape.
TEST(NewtonSchulz, PushesSingularValuesTowardOne) {
  torch::manual_seed(2);
  for (auto shape : {std::vector<int64_t>{8, 32}, {32, 8}, {12, 20}}) {
    const torch::Tensor g = torch::randn(shape, torch::kFloat64) * 7.0;
    for (at::ScalarType dtype : {at::kBFloat16, at::kFloat}) {
      NewtonSchulz ns;
      ns.dtype = dtype;
      const torch::Tensor o = newton_schulz(g, ns);
      EXPECT_EQ(o.sizes(), g.sizes());
      EXPECT_EQ(o.scalar_type(), dtype);
      const torch::Tensor s = torch::linalg_svdvals(o.to(torch::kFloat64));
      EXPECT_GT(s.min().item<double>(), 0.6) << shape[0] << "x" << shape[1];
      EXPECT_LT(s.max().item<double>(), 1.3) << shape[0] << "x" << shape[1];
    }
  }
}

// A bf16 input is not normalized in place (torch's .bfloat16() would alias it).
TEST(NewtonSchulz, LeavesItsInputAlone) {
  const torch::Tensor g = torch::randn({4, 6}).to(torch::kBFloat16);
  const torch::Tensor before = g.clone();
  newton_schulz(g, NewtonSchulz{});
  EXPECT_TRUE(torch::equal(g, before));
}

TEST(NewtonSchulz, AZeroMatrixStaysZero) {
  const torch::Tensor o = newton_schulz(torch::zeros({3, 5}), NewtonSchulz{});
  EXPECT_EQ(o.abs().max().item<double>(), 0.0);
}

TEST(NewtonSchulz, RefusesOtherShapesAndStepCounts) {
  EXPECT_THROW(newton_schulz(torch::randn({2, 3, 3}), NewtonSchulz{}), Error);
  NewtonSchulz many;
  many.steps = 100;
  EXPECT_THROW(newton_schulz(torch::randn({3, 3}), many), Error);
}

}  // namespace
}  // namespace batchlab::optim
