#include "core/optim/foreach_common.h"

#include <ATen/ATen.h>

#include "core/optim/host_reads.h"

namespace batchlab::optim::detail {

std::vector<std::vector<size_t>> bucket_indices(const std::vector<BucketKey>& keys) {
  std::vector<std::vector<size_t>> buckets;
  std::vector<size_t> first_of;  // the index whose key names bucket k
  for (size_t i = 0; i < keys.size(); ++i) {
    size_t k = 0;
    while (k < first_of.size() && !(keys[first_of[k]] == keys[i])) ++k;
    if (k == first_of.size()) {
      first_of.push_back(i);
      buckets.emplace_back();
    }
    buckets[k].push_back(i);
  }
  return buckets;
}

std::vector<at::Tensor> foreach_norm(const std::vector<at::Tensor>& tensors) {
  bool reduced = false, wide = false;
  for (const at::Tensor& t : tensors) {
    reduced = reduced || t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16;
    wide = wide || t.scalar_type() == at::kDouble;
  }
  if (!reduced) return at::_foreach_norm(tensors);
  return at::_foreach_norm(tensors, 2, wide ? at::kDouble : at::kFloat);
}

std::vector<std::vector<std::array<double, 2>>> read_norm_pairs(
    const std::vector<std::vector<at::Tensor>>& a, const std::vector<std::vector<at::Tensor>>& b) {
  std::vector<std::vector<std::array<double, 2>>> out(a.size());
  // Buckets by device; per device one [2, n] float64 tensor holding every pair, read once.
  std::vector<at::Device> devices;
  std::vector<std::vector<size_t>> of_device;
  for (size_t k = 0; k < a.size(); ++k) {
    out[k].resize(a[k].size());
    if (a[k].empty()) continue;
    const at::Device d = a[k].front().device();
    size_t j = 0;
    while (j < devices.size() && devices[j] != d) ++j;
    if (j == devices.size()) {
      devices.push_back(d);
      of_device.emplace_back();
    }
    of_device[j].push_back(k);
  }
  for (const std::vector<size_t>& ks : of_device) {
    std::vector<at::Tensor> rows_a;
    std::vector<at::Tensor> rows_b;
    for (size_t k : ks) {
      rows_a.push_back(at::stack(a[k]).to(at::kDouble));
      rows_b.push_back(at::stack(b[k]).to(at::kDouble));
    }
    const at::Tensor host =
        read_to_host(at::stack({at::cat(rows_a), at::cat(rows_b)})).contiguous();  // [2, n]
    const int64_t n = host.size(1);
    const double* v = host.data_ptr<double>();
    int64_t at_col = 0;
    for (size_t k : ks) {
      for (size_t i = 0; i < a[k].size(); ++i, ++at_col) {
        out[k][i] = {v[at_col], v[n + at_col]};
      }
    }
  }
  return out;
}

}  // namespace batchlab::optim::detail
