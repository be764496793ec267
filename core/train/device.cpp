#include "core/train/device.h"

#include <fmt/format.h>
#include <torch/cuda.h>

#include "core/config/preconditions.h"
#include "core/errors.h"

#ifdef BATCHLAB_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace batchlab::train {

c10::Device resolve_device(const std::string& spec, int64_t local_rank) {
  if (spec == "cpu") return c10::Device(c10::DeviceType::CPU);
  // The schema's DeviceName rule (core/config) checked the spelling when the config was read.
  config::expect(spec.rfind("cuda", 0) == 0, "resolve_device",
                 fmt::format("train.device = {} is not cpu, cuda or cuda:N", spec));
  const auto available = static_cast<int64_t>(torch::cuda::device_count());
  if (!built_with_cuda() || available == 0) {
    throw InputError(fmt::format(
        "train.device = {}: {}; use train.device = \"cpu\" or build against a CUDA LibTorch "
        "(docs/gpu.md)",
        spec,
        built_with_cuda() ? "no CUDA device is visible to this process"
                          : "this batchlab was built against a LibTorch without CUDA"));
  }
  int64_t index = local_rank;
  if (spec.size() > 5) index = std::stoll(spec.substr(5));  // "cuda:N"; syntax checked by config
  if (index < 0 || index >= available) {
    throw InputError(fmt::format("train.device = {}: GPU {} does not exist ({} visible{}); {}",
                                 spec, index, available,
                                 spec.size() > 5 ? "" : fmt::format(", local rank {}", local_rank),
                                 spec.size() > 5 ? "pick an index below the device count"
                                                 : "start at most one local rank per GPU"));
  }
  return c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(index));
}

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

}  // namespace batchlab::train
