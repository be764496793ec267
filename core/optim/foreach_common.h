// What the multi-tensor (`_foreach_*`) optimizer steps of foreach_lamb.h and foreach_lars.h share:
// grouping tensors into lists that one ATen multi-tensor op can take, and reading the per-tensor
// norms the trust ratios need with one host read.
//
// ATen's CUDA `_foreach_*` kernels (multi_tensor_apply) take the i-th tensor of every list
// together and need, for their fast route, one device, one dtype per list and matching sizes and
// strides across the lists; anything else silently falls back to one op per tensor. So the tensors
// of a step are bucketed by (parameter group, device, dtypes): a group's options are single
// scalars of each op, per-tensor values (bias corrections, trust ratios) are scalar lists.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>
#include <vector>

namespace batchlab::optim::detail {

// What makes two tensors' updates share one list: their group, device, and the dtypes of every
// tensor involved (parameter, gradient, state), in a fixed order.
struct BucketKey {
  int64_t group = 0;
  at::Device device = at::kCPU;
  std::vector<at::ScalarType> dtypes;
  friend bool operator==(const BucketKey& a, const BucketKey& b) {
    return a.group == b.group && a.device == b.device && a.dtypes == b.dtypes;
  }
};

// Indices of keys grouped by equal key: buckets in order of first appearance, indices ascending.
std::vector<std::vector<size_t>> bucket_indices(const std::vector<BucketKey>& keys);

// at::_foreach_norm of `tensors` (0-dim tensors, one per input), computed in float32 when any input
// is float16 or bfloat16 (float64 when one is float64): in their own precision the norms of
// half-precision tensors overflow to inf past 65504 (a float16 tensor of 10,000 values of 1000
// has norm 100,000), and bfloat16's keep 8 bits. One multi-tensor op as before.
std::vector<at::Tensor> foreach_norm(const std::vector<at::Tensor>& tensors);

// Per-tensor norm pairs (a_i, b_i) of several buckets, each pair of lists as returned by
// at::_foreach_norm (0-dim tensors), read to the host with ONE read per device (one in practice):
// out[k][i] = {a_i, b_i} of bucket k, as double.
std::vector<std::vector<std::array<double, 2>>> read_norm_pairs(
    const std::vector<std::vector<at::Tensor>>& a, const std::vector<std::vector<at::Tensor>>& b);

}  // namespace batchlab::optim::detail
