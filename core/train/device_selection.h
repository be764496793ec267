// Which device a process trains on: train.device (or `batchlab bench --device`) resolved against
// the process's place on its host and the GPUs it can see.
//   "cpu"     the CPU.
//   "cuda"    one GPU per local rank: local rank r uses GPU r, so N ranks of `batchlab train
//             --nproc N` (or torchrun, or srun without GPU binding) use GPUs 0..N-1. When exactly
//             one GPU is visible, every local rank uses it as GPU 0: Slurm's one-GPU-per-task
//             binding (--gpus-per-task=1, --gpu-bind) gives each task its own CUDA_VISIBLE_DEVICES
//             with one entry, so GPU 0 is a different physical GPU in every task.
//   "cuda:N"  GPU N as written, for a single local rank only: with several ranks per host the same
//             N would put all of them on one GPU (NCCL refuses that: "duplicate GPU"), so it is
//             refused with the fix (use "cuda").
// Anything the machine cannot give is an InputError naming the setting, the value and the fix.
// select_device is a pure function of its arguments, so the rules are tested without a GPU.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <string>

namespace batchlab::train {

struct DeviceRequest {
  std::string spec = "cpu";              // cpu | cuda | cuda:N; the spelling is core/config's check
  std::string setting = "train.device";  // what messages call it (`batchlab bench`: --device)
  int64_t local_rank = 0;                // this process's index on its host
  int64_t local_world_size = 1;          // processes on its host
};

struct VisibleDevices {
  bool cuda_build = false;  // batchlab was built against a CUDA LibTorch
  int64_t gpus = 0;         // CUDA devices this process sees (after CUDA_VISIBLE_DEVICES)
};

c10::Device select_device(const DeviceRequest& request, const VisibleDevices& visible);

// What this process has: built_with_cuda() and LibTorch's device count.
VisibleDevices visible_devices();

// select_device(request, visible_devices()).
c10::Device resolve_device(const DeviceRequest& request);

}  // namespace batchlab::train
