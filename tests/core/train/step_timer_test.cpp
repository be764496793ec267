#include "core/train/step_timer.h"

#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <chrono>
#include <thread>

#include "core/train/device.h"

namespace batchlab::train {
namespace {

TEST(StepTimer, MeasuresWallTimeOnTheCpu) {
  StepTimer timer(c10::Device(c10::DeviceType::CPU));
  EXPECT_FALSE(timer.uses_device_events());
  timer.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const double s = timer.stop();
  EXPECT_GE(s, 0.019);
  EXPECT_LT(s, 2.0);
}

// What the trainer relies on to keep measurements off the training clock.
TEST(StepTimer, PausedStretchesAreLeftOut) {
  StepTimer timer(c10::Device(c10::DeviceType::CPU));
  timer.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  timer.pause();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  timer.resume();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const double s = timer.stop();
  EXPECT_GE(s, 0.039);
  EXPECT_LT(s, 0.25);  // far below the 0.34 s that passed
  timer.start();       // a new step starts from 0
  EXPECT_LT(timer.stop(), 0.1);
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
