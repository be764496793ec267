// Ghost batch normalization (Hoffer, Hubara, Soudry 2017, "Train longer, generalize better"):
// in training mode the statistics are taken over groups of `group` samples rather than over the
// whole (micro-)batch, so batch norm behaves the same whatever the micro-batch and global batch
// size. With group 0 (or a batch no larger than one group) it is ordinary BatchNorm2d.
//
// Parameters and buffers carry BatchNorm2d's names (weight, bias, running_mean, running_var,
// num_batches_tracked), so torchvision state dicts load unchanged. Running statistics are updated
// once per group, in order, exactly as if each group had been a separate forward pass: 8 groups of
// 32 in one micro-batch of 256 leave the same running statistics as 8 micro-batches of 32.
#pragma once

#include <torch/nn/cloneable.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

namespace batchlab::models {

struct GhostBatchNormOptions {
  int64_t num_features = 0;
  int64_t group = 0;  // samples per statistics group; 0 = the whole batch
  double eps = 1e-5;
  double momentum = 0.1;
};

class GhostBatchNorm2dImpl : public torch::nn::Cloneable<GhostBatchNorm2dImpl> {
 public:
  explicit GhostBatchNorm2dImpl(GhostBatchNormOptions options);
  void reset() override;

  // x: float [N, C, H, W] -> same shape. In training, N must be a multiple of the group size.
  torch::Tensor forward(const torch::Tensor& x);

  GhostBatchNormOptions options;
  torch::Tensor weight;        // [C] (gamma)
  torch::Tensor bias;          // [C] (beta)
  torch::Tensor running_mean;  // [C]
  torch::Tensor running_var;   // [C]
  torch::Tensor num_batches_tracked;
};
TORCH_MODULE(GhostBatchNorm2d);

}  // namespace batchlab::models
