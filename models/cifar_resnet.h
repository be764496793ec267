// The CIFAR-10 ResNets of He et al. 2016 ("Deep Residual Learning for Image Recognition",
// sec. 4.2), for CPU-scale studies: ResNet-20/32/56 (depth 6n + 2 with n = 3/5/9).
//
//   conv1  3x3, C -> 16, stride 1, BN, ReLU                         [B, 16, 32, 32]
//   layer1 n blocks, 16 channels                                     [B, 16, 32, 32]
//   layer2 n blocks, 32 channels, first block stride 2               [B, 32, 16, 16]
//   layer3 n blocks, 64 channels, first block stride 2               [B, 64, 8, 8]
//   global average pool, fc 64 -> num_classes                        [B, num_classes]
//
// Every block is two 3x3 convolutions with BN (the BasicBlock layout and names conv1, bn1, conv2,
// bn2). Shortcuts are the paper's option A, which its CIFAR experiments and parameter counts use:
// always the identity, parameter-free; where a block halves the resolution and doubles the
// channels, the shortcut takes every second pixel (the positions a stride-2 convolution samples)
// and appends zero channels. So these models have no `downsample` modules, and their parameter
// counts are the paper's (Table 6: 0.27M, 0.46M, 0.85M): 269,722 / 464,154 / 853,018 with 10
// classes. Initialization as the ImageNet ResNets here (He-normal fan_out, BN 1/0, default
// Linear).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <array>
#include <cstdint>

#include "models/ghost_batch_norm.h"
#include "models/network.h"

namespace batchlab::models {

// Two 3x3 convolutions with an option-A (zero-padding identity) shortcut.
class CifarBlockImpl : public torch::nn::Module {
 public:
  // stride 1 needs out_channels == in_channels; stride 2 needs out_channels >= in_channels.
  CifarBlockImpl(int64_t in_channels, int64_t out_channels, int64_t stride, int64_t bn_group = 0);

  // x: float [B, in, H, W] -> [B, out, ceil(H/stride), ceil(W/stride)].
  torch::Tensor forward(const torch::Tensor& x);

  // bn2's scale (gamma) = 0: the block starts as its shortcut (Goyal et al. 2017).
  void zero_init_residual();

  torch::nn::Conv2d conv1{nullptr};
  GhostBatchNorm2d bn1{nullptr};
  torch::nn::Conv2d conv2{nullptr};
  GhostBatchNorm2d bn2{nullptr};

 private:
  int64_t in_channels_;
  int64_t out_channels_;
  int64_t stride_;
};
TORCH_MODULE(CifarBlock);

struct CifarResNetOptions {
  int64_t depth = 20;  // 6n + 2: 20, 32, 44, 56, 110, ...
  int64_t in_channels = 3;
  int64_t num_classes = 10;
  bool zero_init_residual = false;
  int64_t bn_group = 0;  // ghost batch norm over groups of this many samples; 0 = whole batch
};

class CifarResNet : public ImageClassifier {
 public:
  // Throws InputError for a depth that is not 6n + 2 with n >= 1, fewer than 1 input channel or
  // fewer than 2 classes.
  explicit CifarResNet(CifarResNetOptions options);

  // images: float [B, C, H, W] -> logits [B, num_classes].
  torch::Tensor forward(const torch::Tensor& images) override;

  const CifarResNetOptions& options() const { return options_; }

  // Forward multiply-accumulates per sample (convolutions and fc; the shortcuts cost none).
  // resnet20 at 32x32: 40.55 M.
  static int64_t forward_macs(const CifarResNetOptions& options, int64_t height, int64_t width);

 private:
  CifarResNetOptions options_;
  torch::nn::Conv2d conv1_{nullptr};
  GhostBatchNorm2d bn1_{nullptr};
  std::array<torch::nn::Sequential, 3> layers_;  // "layer1" .. "layer3"
  torch::nn::Linear fc_{nullptr};
};

}  // namespace batchlab::models
