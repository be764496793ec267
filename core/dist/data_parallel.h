// train::DataParallel over a c10d process group: what `batchlab train` hands the trainer when the
// environment describes more than one rank (rendezvous.h).
#pragma once

#include <memory>

#include "core/dist/process_group.h"
#include "core/train/data_parallel.h"

namespace batchlab::dist {

class ProcessGroupDataParallel : public train::DataParallel {
 public:
  explicit ProcessGroupDataParallel(std::shared_ptr<ProcessGroup> group);

  int64_t rank() const override { return group_->rank(); }
  int64_t world_size() const override { return group_->world_size(); }

  // Tensors are grouped by dtype and flattened: one broadcast per dtype, not one per tensor.
  void broadcast_from_rank0(const std::vector<torch::Tensor>& tensors) override;
  torch::Tensor all_reduce_sum(const torch::Tensor& values) override;
  std::unique_ptr<train::GradientSync> make_gradient_sync(const std::vector<torch::Tensor>& params,
                                                          double bucket_mb) override;

  ProcessGroup& group() { return *group_; }

 private:
  std::shared_ptr<ProcessGroup> group_;
};

}  // namespace batchlab::dist
