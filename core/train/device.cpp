#include "core/train/device.h"

#include <ATen/Context.h>
#include <fmt/format.h>
#include <torch/cuda.h>

#ifdef BATCHLAB_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace batchlab::train {

void use_device(const c10::Device& device) {
#ifdef BATCHLAB_WITH_CUDA
  if (device.is_cuda()) c10::cuda::set_device(device.index());
#else
  (void)device;
#endif
}

bool built_with_cuda() {
#ifdef BATCHLAB_WITH_CUDA
  return true;
#else
  return false;
#endif
}

bool built_with_nccl() {
#ifdef BATCHLAB_WITH_NCCL
  return true;
#else
  return false;
#endif
}

std::vector<std::string> cuda_device_descriptions() {
  std::vector<std::string> out;
  const auto n = static_cast<int64_t>(torch::cuda::device_count());
  for (int64_t i = 0; i < n; ++i) {
#ifdef BATCHLAB_WITH_CUDA
    const auto* p = at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(i));
    out.push_back(fmt::format("cuda:{} {} ({:.1f} GiB, sm_{}{}, {} SMs)", i, p->name,
                              static_cast<double>(p->totalGlobalMem) / (1024.0 * 1024.0 * 1024.0),
                              p->major, p->minor, p->multiProcessorCount));
#else
    out.push_back(fmt::format("cuda:{}", i));
#endif
  }
  return out;
}

std::string device_name(const c10::Device& device) {
  if (!device.is_cuda()) return device.str();
#ifdef BATCHLAB_WITH_CUDA
  return at::cuda::getDeviceProperties(device.has_index() ? device.index() : 0)->name;
#else
  return device.str();
#endif
}

bool supports_bf16(const c10::Device& device) {
  if (device.is_cpu()) return true;
#ifdef BATCHLAB_WITH_CUDA
  if (device.is_cuda()) {
    return at::cuda::getDeviceProperties(device.has_index() ? device.index() : 0)->major >= 8;
  }
#endif
  return false;
}

bool cudnn_benchmark_pays_off(const c10::Device& device, bool fixed_input_shapes) {
  return device.is_cuda() && fixed_input_shapes;
}

bool configure_cudnn_benchmark(const c10::Device& device, bool fixed_input_shapes) {
  if (cudnn_benchmark_pays_off(device, fixed_input_shapes)) {
    at::globalContext().setBenchmarkCuDNN(true);
  }
  return at::globalContext().benchmarkCuDNN();
}

}  // namespace batchlab::train
