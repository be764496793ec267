// The two-convolution residual block of He et al. 2016 ("BasicBlock" in torchvision, same layout
// and parameter names: conv1, bn1, conv2, bn2, downsample.0 (1x1 conv), downsample.1 (BN)), so that
// parameter-name rules (optim.groups, optim.exclude) read the same for every ResNet here.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstddef>
#include <cstdint>

#include "models/ghost_batch_norm.h"

namespace batchlab::models {

class BasicBlockImpl : public torch::nn::Module {
 public:
  // A stride of 2 (or a change of channel count) adds a 1x1 strided convolution + BN on the
  // shortcut. `bn_group` > 0 makes every batch norm a ghost batch norm over groups of that many
  // samples (batch.bn_group).
  BasicBlockImpl(int64_t in_channels, int64_t out_channels, int64_t stride, int64_t bn_group = 0);

  // x: float [B, in, H, W] -> [B, out, ceil(H/stride), ceil(W/stride)].
  torch::Tensor forward(const torch::Tensor& x);

  // Sets bn2's scale (gamma) to 0, so the block starts as the identity (Goyal et al. 2017): the
  // "zero_init_residual" trick that large-batch training relies on.
  void zero_init_residual();

  // Forward multiply-accumulates per sample for an input of spatial size height x width.
  static int64_t forward_macs(int64_t in_channels, int64_t out_channels, int64_t stride,
                              int64_t height, int64_t width);

  torch::nn::Conv2d conv1{nullptr};
  GhostBatchNorm2d bn1{nullptr};
  torch::nn::Conv2d conv2{nullptr};
  GhostBatchNorm2d bn2{nullptr};
  torch::nn::Sequential downsample{nullptr};  // null when the shortcut is the identity
};
TORCH_MODULE(BasicBlock);

// 3x3 convolution with padding 1 and no bias (the BN that follows has its own shift): the 3x3
// layers of every ResNet here.
torch::nn::Conv2d conv3x3(int64_t in, int64_t out, int64_t stride);

// The first block of every stage but the first halves the resolution.
inline int64_t stage_stride(size_t stage, int64_t block) { return stage > 0 && block == 0 ? 2 : 1; }

// Output size of a 3x3 convolution with padding 1 (and of the 1x1 shortcut with padding 0) at
// `stride`.
inline int64_t conv_out_size(int64_t size, int64_t stride) { return (size - 1) / stride + 1; }

}  // namespace batchlab::models
