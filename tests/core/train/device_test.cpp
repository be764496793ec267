#include "core/train/device.h"

#include <gtest/gtest.h>
#include <torch/cuda.h>

#include "core/errors.h"
#include "core/train/step_timer.h"

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

TEST(StepTimer, MeasuresWallTimeOnTheCpu) {
  StepTimer timer(c10::Device(c10::DeviceType::CPU));
  EXPECT_FALSE(timer.uses_device_events());
  timer.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const double s = timer.stop();
  EXPECT_GE(s, 0.019);
  EXPECT_LT(s, 2.0);
}

TEST(StepTimer, UsesCudaEventsOnAGpu) {
  if (!built_with_cuda() || torch::cuda::device_count() < 1) GTEST_SKIP() << "no GPU";
  StepTimer timer(c10::Device(c10::DeviceType::CUDA, 0));
  EXPECT_TRUE(timer.uses_device_events());
  timer.start();
  auto x = torch::randn({2048, 2048}, torch::TensorOptions().device(torch::kCUDA));
  for (int i = 0; i < 10; ++i) x = torch::mm(x, x).tanh();
  EXPECT_GT(timer.stop(), 0.0);
}

}  // namespace
}  // namespace batchlab::train
