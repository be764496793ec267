// The three-convolution residual block of the deeper ResNets (50/101/152), torchvision's
// "Bottleneck" in its v1.5 form: the stride sits on the 3x3 convolution (conv2), not on the first
// 1x1 as in He et al. 2016, which costs a little more compute and gains about 0.5% top-1.
// Layout and parameter names are torchvision's: conv1 (1x1, in -> width), bn1, conv2 (3x3, stride,
// width -> width), bn2, conv3 (1x1, width -> 4 x width), bn3, and on a projection shortcut
// downsample.0 (1x1 conv, stride) and downsample.1 (BN). Convolutions have no bias; every batch
// norm has eps 1e-5 and momentum 0.1 (BatchNorm2d's defaults).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>

#include "models/ghost_batch_norm.h"

namespace batchlab::models {

class BottleneckImpl : public torch::nn::Module {
 public:
  // Output channels are kExpansion x width. A stride other than 1 or a change of channel count
  // adds the projection shortcut. `bn_group` > 0 makes every batch norm a ghost batch norm over
  // groups of that many samples (batch.bn_group).
  BottleneckImpl(int64_t in_channels, int64_t width, int64_t stride, int64_t bn_group = 0);

  // x: float [B, in, H, W] -> [B, 4 x width, ceil(H/stride), ceil(W/stride)].
  torch::Tensor forward(const torch::Tensor& x);

  // Sets bn3's scale (gamma) to 0: the residual branch then outputs 0 and the block starts as its
  // shortcut (Goyal et al. 2017).
  void zero_init_residual();

  // Forward multiply-accumulates per sample for an input of spatial size height x width.
  static int64_t forward_macs(int64_t in_channels, int64_t width, int64_t stride, int64_t height,
                              int64_t image_width);

  static constexpr int64_t kExpansion = 4;

  torch::nn::Conv2d conv1{nullptr};
  GhostBatchNorm2d bn1{nullptr};
  torch::nn::Conv2d conv2{nullptr};
  GhostBatchNorm2d bn2{nullptr};
  torch::nn::Conv2d conv3{nullptr};
  GhostBatchNorm2d bn3{nullptr};
  torch::nn::Sequential downsample{nullptr};  // null when the shortcut is the identity
};
TORCH_MODULE(Bottleneck);

}  // namespace batchlab::models
