// The training device of this process: train.device resolved against what the machine has.
// "cpu"; "cuda" = the GPU of this rank's local index (LOCAL_RANK / SLURM_LOCALID), so N local ranks
// use GPUs 0..N-1; "cuda:N" = GPU N, as written. A CUDA device on a build or machine without one is
// an InputError naming train.device and what is available.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <string>
#include <vector>

namespace batchlab::train {

c10::Device resolve_device(const std::string& spec, int64_t local_rank = 0);

// Makes `device` the current CUDA device of this thread (kernels, streams, NCCL), so nothing lands
// on GPU 0 by default; nothing for the CPU.
void use_device(const c10::Device& device);

// Whether this build was compiled against a CUDA LibTorch (BATCHLAB_WITH_CUDA) and with NCCL.
bool built_with_cuda();
bool built_with_nccl();

// One line per visible CUDA device: "cuda:0 NVIDIA H100 80GB HBM3 (79.1 GiB, sm_90)"; names and
// memory need a CUDA build, a CPU build lists "cuda:N" only if LibTorch sees a device at all.
std::vector<std::string> cuda_device_descriptions();

}  // namespace batchlab::train
