#include "core/train/device.h"

#include <gtest/gtest.h>
#include <torch/cuda.h>

#include "core/errors.h"

namespace batchlab::train {
namespace {

TEST(Device, CpuResolvesToTheCpu) { EXPECT_TRUE(resolve_device("cpu", 3).is_cpu()); }

TEST(Device, CudaWithoutAGpuIsAnInputErrorNamingTheKey) {
  if (built_with_cuda() && torch::cuda::device_count() > 0) GTEST_SKIP() << "a GPU is present";
  try {
    resolve_device("cuda", 0);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("train.device = cuda"), std::string::npos) << e.what();
  }
}

TEST(Device, LocalRankPicksTheGpu) {
  if (!built_with_cuda() || torch::cuda::device_count() < 1) GTEST_SKIP() << "no GPU";
  EXPECT_EQ(resolve_device("cuda", 0).index(), 0);
  EXPECT_EQ(resolve_device("cuda:0", 5).index(), 0);  // an explicit index is taken as written
  EXPECT_THROW(resolve_device("cuda", static_cast<int64_t>(torch::cuda::device_count())),
               InputError);
}
}  // namespace
}  // namespace batchlab::train
