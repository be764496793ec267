#include "core/train/device.h"

#include <ATen/Context.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include "core/errors.h"
#include "core/train/device_selection.h"

namespace batchlab::train {
namespace {

TEST(Device, CpuResolvesToTheCpu) {
  DeviceRequest r;
  r.spec = "cpu";
  EXPECT_TRUE(resolve_device(r).is_cpu());
}

TEST(Device, CudaWithoutAGpuIsAnInputErrorNamingTheKey) {
  if (built_with_cuda() && torch::cuda::device_count() > 0) GTEST_SKIP() << "a GPU is present";
  DeviceRequest r;
  r.spec = "cuda";
  try {
    resolve_device(r);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("train.device = cuda"), std::string::npos) << e.what();
  }
}

TEST(Device, TheCpuRunsBf16AutocastAndIsNamedCpu) {
  const c10::Device cpu(c10::DeviceType::CPU);
  EXPECT_TRUE(supports_bf16(cpu));
  EXPECT_EQ(device_name(cpu), "cpu");
}

TEST(Device, CudnnBenchmarkOnlyForFixedShapesOnAGpu) {
  const c10::Device gpu(c10::DeviceType::CUDA, 0);
  const c10::Device cpu(c10::DeviceType::CPU);
  EXPECT_TRUE(cudnn_benchmark_pays_off(gpu, /*fixed_input_shapes=*/true));
  EXPECT_FALSE(cudnn_benchmark_pays_off(gpu, /*fixed_input_shapes=*/false));
  EXPECT_FALSE(cudnn_benchmark_pays_off(cpu, /*fixed_input_shapes=*/true));
  // On the CPU the process-wide flag is left as it was.
  const bool before = at::globalContext().benchmarkCuDNN();
  EXPECT_EQ(configure_cudnn_benchmark(cpu, true), before);
  EXPECT_EQ(at::globalContext().benchmarkCuDNN(), before);
}

TEST(Device, ConfiguringAGpuTaskWithFixedShapesTurnsCudnnBenchmarkOn) {
  if (!built_with_cuda() || torch::cuda::device_count() < 1) GTEST_SKIP() << "no GPU";
  EXPECT_TRUE(configure_cudnn_benchmark(c10::Device(c10::DeviceType::CUDA, 0), true));
  EXPECT_TRUE(at::globalContext().benchmarkCuDNN());
}

}  // namespace
}  // namespace batchlab::train
