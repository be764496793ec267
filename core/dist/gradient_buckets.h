// Bucketed gradient all-reduce, the part of data parallelism that makes it cheap: parameters are
// grouped into buckets of about train.bucket_mb in reverse parameter order (the order backward
// produces their gradients), each bucket is one flat tensor and one collective (not one per
// parameter), and a bucket's all-reduce starts as soon as all of its gradients are final, while
// backward is still computing the rest.
//
// When is a gradient final? The hook LibTorch offers on a parameter fires when its gradient for
// this backward has been computed, *before* autograd adds it into .grad. During the last
// micro-batch's backward the final accumulated gradient is therefore .grad (the earlier
// micro-batches' sum) + the hook's gradient, which the hook writes straight into the bucket. Hooks
// do nothing until armed (the other micro-batches), and buckets start strictly in order, so every
// rank issues the same collectives in the same order even if its hooks fire in another order.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "core/dist/process_group.h"
#include "core/train/data_parallel.h"

namespace batchlab::dist {

class GradientBuckets : public train::GradientSync {
 public:
  // `params`: the trainer's parameters (those not requiring gradients are left out). Buckets
  // hold one dtype and device each and close once they exceed `bucket_mb` MiB.
  GradientBuckets(ProcessGroup& group, std::vector<torch::Tensor> params, double bucket_mb);
  ~GradientBuckets() override;
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  void arm(bool measure_local_norm) override;
  torch::Tensor finish() override;

  // Parameter indices per bucket, in launch order (for tests and logs).
  std::vector<std::vector<size_t>> layout() const;

 private:
  struct Slot {
    size_t bucket = 0;
    int64_t offset = 0;
    int64_t numel = 0;
    bool filled = false;
    bool hooked = false;
    unsigned hook = 0;  // handle from register_hook
  };
  struct Bucket {
    std::vector<size_t> members;
    torch::Tensor flat;  // [sum of numel], the members' gradients back to back
    torch::Tensor comm;  // what the collective reduces: `flat`, or a copy on the group's device
    int64_t waiting = 0;
    std::unique_ptr<PendingCollective> pending;
  };

  void on_gradient(size_t index, const torch::Tensor& grad);
  void fill(size_t index, const torch::Tensor* fresh);
  void launch_ready();

  ProcessGroup& group_;
  std::vector<torch::Tensor> params_;
  std::vector<Slot> slots_;
  std::vector<Bucket> buckets_;
  size_t next_launch_ = 0;
  bool armed_ = false;
  bool measure_ = false;
  std::vector<torch::Tensor> local_sq_;  // float64 0-dim per launched bucket
};

}  // namespace batchlab::dist
