// What the training device is and how it is set up: the process's current CUDA device, what the
// build and the GPUs can do (CUDA, NCCL, bfloat16), their names, and cuDNN's autotuning. Which
// device a process trains on is core/train/device_selection.h's job.
#pragma once

#include <c10/core/Device.h>

#include <string>
#include <vector>

namespace batchlab::train {

// Makes `device` the current CUDA device of this thread (kernels, streams, NCCL), so nothing lands
// on GPU 0 by default; nothing for the CPU.
void use_device(const c10::Device& device);

// Whether this build was compiled against a CUDA LibTorch (BATCHLAB_WITH_CUDA) and with NCCL.
bool built_with_cuda();
bool built_with_nccl();

// One line per visible CUDA device: "cuda:0 NVIDIA H100 80GB HBM3 (79.1 GiB, sm_90)"; names and
// memory need a CUDA build, a CPU build lists "cuda:N" only if LibTorch sees a device at all.
std::vector<std::string> cuda_device_descriptions();

// "NVIDIA H100 80GB HBM3" for a CUDA device of a CUDA build; "cpu" for the CPU; "cuda:N" when
// the build cannot ask.
std::string device_name(const c10::Device& device);

// Whether bf16 autocast runs natively: always on the CPU (LibTorch's CPU autocast), on GPUs of
// compute capability 8.0 (Ampere) and later, whose tensor cores have bfloat16.
bool supports_bf16(const c10::Device& device);

// cuDNN's benchmark mode times the candidate convolution algorithms the first time it meets an
// input shape and keeps the fastest: a few slow steps at the start, then the best kernels. It pays
// off on a CUDA device when input shapes never change (fixed-size image batches); with shapes that
// vary it would re-tune on every new one.
bool cudnn_benchmark_pays_off(const c10::Device& device, bool fixed_input_shapes);

// Switches cuDNN's benchmark mode on (at::globalContext(), process-wide) when it pays off; leaves
// it alone otherwise. Returns whether it is on.
bool configure_cudnn_benchmark(const c10::Device& device, bool fixed_input_shapes);

}  // namespace batchlab::train
