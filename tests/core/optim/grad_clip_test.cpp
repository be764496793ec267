// core/optim/grad_clip.h on the device path (the norm a tensor, as on a GPU; here on the CPU with
// on_host = false): the clipping is one multi-tensor op per dtype, not one op per tensor, and
// half-precision gradients are measured and divided in float32, so a norm past float16's 65504
// neither becomes inf nor zeroes the gradients (issue 45).
#include "core/optim/grad_clip.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <vector>

#include "core/optim/foreach_common.h"
#include "tests/op_counter.h"

namespace batchlab::optim {
namespace {

std::vector<at::Tensor> clip_params(int count, at::ScalarType dtype, double grad_value) {
  std::vector<at::Tensor> params;
  for (int i = 0; i < count; ++i) {
    auto p = torch::zeros({10000}, torch::TensorOptions().dtype(dtype));
    p.mutable_grad() = torch::full({10000}, grad_value, torch::TensorOptions().dtype(dtype));
    params.push_back(p);
  }
  return params;
}

int64_t ops_to_clip_on_device(int count) {
  auto params = clip_params(count, at::kFloat, 1.0);
  const GradNorm norm = global_grad_norm(params, /*on_host=*/false);
  test_util::OpCounter counter;
  clip_grad_norm(params, 1.0, norm);
  return counter.ops();
}

TEST(GradClip, OnTheDeviceTheOpsDoNotGrowWithTheTensorCount) {
  const int64_t few = ops_to_clip_on_device(6);
  const int64_t many = ops_to_clip_on_device(60);
  RecordProperty("clip_ops_6_tensors", static_cast<int>(few));
  EXPECT_EQ(few, many) << "one op per tensor (a kernel launch each on a GPU)";
  EXPECT_LE(few, 6);
}

TEST(GradClip, TheDevicePathClipsAsTheHostPathDoes) {
  auto on_host = clip_params(3, at::kFloat, 0.5);
  auto on_device = clip_params(3, at::kFloat, 0.5);
  const GradNorm a = clip_grad_norm(on_host, 2.0);
  const GradNorm b = global_grad_norm(on_device, /*on_host=*/false);
  clip_grad_norm(on_device, 2.0, b);
  EXPECT_NEAR(a.norm.item<double>(), b.norm.item<double>(), 1e-6);
  for (size_t i = 0; i < on_host.size(); ++i) {
    EXPECT_TRUE(torch::allclose(on_host[i].grad(), on_device[i].grad(), 1e-6, 1e-7));
  }
  EXPECT_NEAR(global_grad_norm(on_device, false).norm.item<double>(), 2.0, 1e-4);
}

TEST(GradClip, HalfPrecisionNormsPastFloat16sRangeStayFinite) {
  // Each gradient: 10,000 values of 1000, norm 100,000 (float16 ends at 65504).
  auto params = clip_params(2, at::kHalf, 1000.0);
  const auto per_tensor = detail::foreach_norm({params[0].grad(), params[1].grad()});
  ASSERT_EQ(per_tensor.size(), 2u);
  EXPECT_NEAR(per_tensor[0].item<double>(), 1e5, 10.0);
  const GradNorm norm = global_grad_norm(params, /*on_host=*/false);
  ASSERT_TRUE(std::isfinite(norm.norm.item<double>()));
  EXPECT_NEAR(norm.norm.item<double>(), 1e5 * std::sqrt(2.0), 20.0);
  // The clip factor (141,421) is past float16's range too: the gradients must not become 0.
  clip_grad_norm(params, 1.0, norm);
  const double after = global_grad_norm(params, false).norm.item<double>();
  EXPECT_NEAR(after, 1.0, 1e-2);
}

}  // namespace
}  // namespace batchlab::optim
