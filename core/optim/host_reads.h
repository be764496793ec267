// The one way code on the training step copies device values to the host, and a count of it.
//
// On a GPU every device-to-host copy waits for the work queued before it: a step that reads one
// value per tensor (a norm, a trust ratio, a "should I clip" decision) stalls the device hundreds
// of times. The step therefore gathers what it needs into one tensor on the device and reads that
// once per measurement (the step's loss and gradient norm, the optimizer's trust ratios, the
// per-layer statistics, the noise scale's micro-batch norms). Every such read goes through
// read_to_host(), which counts it, so a test on the CPU can check that a step over N tensors makes
// O(1) reads (tests/core/optim/host_reads_test.cpp, tests/core/train/step_host_reads_test.cpp;
// those tests also watch for reads that bypass this function: .item(), nonzero, masked_select).
//
// The counter is one relaxed atomic increment per read, a handful per step: nothing on the hot
// path of the element loops.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace batchlab::optim {

// `t` on the CPU (a copy when it is elsewhere; `t` itself when it is already on the CPU), counted
// as one host read either way: the same code on CPU tensors counts what a GPU run would.
at::Tensor read_to_host(const at::Tensor& t);

// Reads made through read_to_host since the process started (all threads).
int64_t host_reads();

}  // namespace batchlab::optim
