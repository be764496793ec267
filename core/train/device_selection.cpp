#include "core/train/device_selection.h"

#include <fmt/format.h>
#include <torch/cuda.h>

#include <optional>

#include "core/config/preconditions.h"
#include "core/errors.h"
#include "core/train/device.h"

namespace batchlab::train {

namespace {

// "cuda:N" -> N; "cuda" -> nullopt. The schema's DeviceName rule checked the spelling.
std::optional<int64_t> explicit_index(const std::string& spec) {
  constexpr size_t kPrefix = 5;  // "cuda:"
  if (spec.size() <= kPrefix) return std::nullopt;
  return std::stoll(spec.substr(kPrefix));
}

void check_gpus_exist(const DeviceRequest& r, const VisibleDevices& visible) {
  if (visible.cuda_build && visible.gpus > 0) return;
  throw InputError(
      fmt::format("{} = {}: {}; use {} = \"cpu\" or build against a CUDA LibTorch (docs/gpu.md)",
                  r.setting, r.spec,
                  visible.cuda_build ? "no CUDA device is visible to this process"
                                     : "this batchlab was built against a LibTorch without CUDA",
                  r.setting));
}

int64_t explicit_gpu(const DeviceRequest& r, const VisibleDevices& visible, int64_t index) {
  if (r.local_world_size > 1) {
    throw InputError(fmt::format(
        "{} = {}: {} processes run on this host and an explicit index would put every one of "
        "them on GPU {}; use {} = \"cuda\" (local rank r takes GPU r) or restrict each process "
        "with CUDA_VISIBLE_DEVICES",
        r.setting, r.spec, r.local_world_size, index, r.setting));
  }
  if (index >= visible.gpus) {
    throw InputError(
        fmt::format("{} = {}: GPU {} does not exist ({} visible); pick an index "
                    "below the device count",
                    r.setting, r.spec, index, visible.gpus));
  }
  return index;
}

int64_t local_rank_gpu(const DeviceRequest& r, const VisibleDevices& visible) {
  if (visible.gpus == 1) return 0;  // one GPU bound to this task (Slurm), or one rank on one GPU
  if (r.local_rank >= visible.gpus) {
    throw InputError(fmt::format(
        "{} = {}: local rank {} of {} has no GPU of its own ({} visible); start at most one "
        "local rank per GPU",
        r.setting, r.spec, r.local_rank, r.local_world_size, visible.gpus));
  }
  return r.local_rank;
}

}  // namespace

c10::Device select_device(const DeviceRequest& request, const VisibleDevices& visible) {
  if (request.spec == "cpu") return c10::Device(c10::DeviceType::CPU);
  config::expect(request.spec.rfind("cuda", 0) == 0, "select_device",
                 fmt::format("{} = {} is not cpu, cuda or cuda:N", request.setting, request.spec));
  config::expect(request.local_rank >= 0 && request.local_rank < request.local_world_size,
                 "select_device", "local rank outside [0, local world size)");
  check_gpus_exist(request, visible);
  const auto index = explicit_index(request.spec);
  const int64_t gpu =
      index ? explicit_gpu(request, visible, *index) : local_rank_gpu(request, visible);
  return c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(gpu));
}

VisibleDevices visible_devices() {
  VisibleDevices v;
  v.cuda_build = built_with_cuda();
  v.gpus = static_cast<int64_t>(torch::cuda::device_count());
  return v;
}

c10::Device resolve_device(const DeviceRequest& request) {
  return select_device(request, visible_devices());
}

}  // namespace batchlab::train
