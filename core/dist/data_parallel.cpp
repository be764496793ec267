#include "core/dist/data_parallel.h"

#include <torch/torch.h>

#include <map>

#include "core/dist/gradient_buckets.h"

namespace batchlab::dist {

ProcessGroupDataParallel::ProcessGroupDataParallel(std::shared_ptr<ProcessGroup> group)
    : group_(std::move(group)) {}

void ProcessGroupDataParallel::broadcast_from_rank0(const std::vector<torch::Tensor>& tensors) {
  torch::NoGradGuard no_grad;
  std::map<c10::ScalarType, std::vector<torch::Tensor>> by_dtype;
  for (const auto& t : tensors) {
    if (t.defined() && t.numel() > 0) by_dtype[t.scalar_type()].push_back(t);
  }
  for (auto& [dtype, group] : by_dtype) {
    std::vector<torch::Tensor> flat;
    for (const auto& t : group) flat.push_back(t.detach().reshape({-1}).to(group_->device()));
    auto all = torch::cat(flat);  // [total] on the group's device
    group_->broadcast(all, "broadcast of the initial parameters and buffers from rank 0")->wait();
    int64_t offset = 0;
    for (auto& t : group) {
      const int64_t n = t.numel();
      t.detach().copy_(all.slice(0, offset, offset + n).view(t.sizes()));
      offset += n;
    }
  }
}

torch::Tensor ProcessGroupDataParallel::all_reduce_sum(const torch::Tensor& values) {
  auto t = values.detach().to(group_->device(), torch::kFloat64).contiguous().clone();
  group_->all_reduce_sum(t, "all-reduce of step metrics, evaluation sums or buffers")->wait();
  return t.to(torch::kCPU);
}

std::unique_ptr<train::GradientSync> ProcessGroupDataParallel::make_gradient_sync(
    const std::vector<torch::Tensor>& params, double bucket_mb) {
  return std::make_unique<GradientBuckets>(*group_, params, bucket_mb);
}

}  // namespace batchlab::dist
