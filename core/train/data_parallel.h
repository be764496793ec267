// Data parallelism as the trainer sees it. core/dist implements these interfaces over LibTorch's
// c10d process groups (Gloo for CPU tensors, NCCL for CUDA ones), so core/train never includes a
// c10d header and single-process runs never touch one.
//
// Every rank runs its own Trainer and calls these methods in the same order: collectives are
// matched across processes by their order, not by name. A collective that cannot complete (a
// rank died or stopped answering for train.dist_timeout) throws dist::CollectiveError on every
// rank still alive, which ends the run as failed instead of hanging it.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace batchlab::train {

// Averages the accumulated gradients of a step across ranks.
//
// `arm` is called right before the backward pass of the step's last micro-batch. From then on,
// as soon as every gradient of a bucket (~train.bucket_mb of parameters, filled in reverse
// parameter order: the order backward produces them) is final, the bucket is flattened and its
// all-reduce starts, overlapping communication with the rest of backward. `finish` is called
// after that backward returns: it starts the buckets that are still waiting (parameters that got
// no gradient this step), waits for all of them and leaves in every parameter's .grad the mean of
// the ranks' accumulated gradients.
class GradientSync {
 public:
  virtual ~GradientSync() = default;
  // `measure_local_norm`: also take the squared L2 norm of this rank's own accumulated gradient
  // (before averaging), for the gradient noise scale.
  virtual void arm(bool measure_local_norm) = 0;
  // float64 0-dim on the gradients' device: the local squared norm when it was asked for,
  // otherwise undefined.
  virtual torch::Tensor finish() = 0;
};

class DataParallel {
 public:
  virtual ~DataParallel() = default;
  virtual int64_t rank() const = 0;
  virtual int64_t world_size() const = 0;

  // Overwrites every tensor (any dtypes; one device) with rank 0's values in place.
  virtual void broadcast_from_rank0(const std::vector<torch::Tensor>& tensors) = 0;

  // Sums `values` (float64 [n], CPU) across ranks; blocking. Used for the few scalars a step or an
  // evaluation must agree on (loss, stop and checkpoint decisions, metric sums).
  virtual torch::Tensor all_reduce_sum(const torch::Tensor& values) = 0;

  // The gradient averaging of `params` (the trainer's parameters, in its order).
  virtual std::unique_ptr<GradientSync> make_gradient_sync(const std::vector<torch::Tensor>& params,
                                                           double bucket_mb) = 0;
};

}  // namespace batchlab::train
