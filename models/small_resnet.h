// A small residual CNN for 28x28 grayscale images (Fashion-MNIST) that trains in about a minute on
// two CPU cores, and works for any C x H x W input. Layout (width w, default 32; shapes for
// 1x28x28):
//
//   conv1  3x3, C -> w/2, stride 1, BN, ReLU                   [B, w/2, 28, 28]  cheap: few
//   channels layer1 blocks[0] BasicBlocks, w channels, first stride 2   [B, w, 14, 14] layer2
//   blocks[1] BasicBlocks, 2w channels, first stride 2  [B, 2w, 7, 7] global average pool, fc [B,
//   num_classes]
//
// Downsampling right after a thin stem keeps most of the compute at 14x14 and 7x7, where
// convolutions have enough channels to run efficiently. Parameter names follow torchvision's ResNet
// (conv1, bn1, layerN.i.{conv1,bn1,conv2,bn2,downsample.0,downsample.1}, fc).
//
// Default (w 32, blocks {2, 2}): 165,626 parameters, 12.96 M forward MACs per 1x28x28 sample (78
// MFLOP per training sample). Measured on the 2-core development machine (LibTorch 1.13, OpenBLAS,
// oneDNN, 2 threads), SGD lr 0.1, momentum 0.9, weight decay 5e-4, batch 128, constant LR:
// about 22.5 s per Fashion-MNIST epoch; test accuracy after epochs 1-4: 86.5 / 87.1 / 89.2 / 90.0%
// (seed 0) and 87.2 / 88.7 / 89.0 / 90.5% (seed 1), i.e. 88% after 45-68 s of training, 90% after
// ~90 s. blocks {1, 1} costs half (12.5 s per epoch) but hovers around 84-89% at this LR.
#pragma once

#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include <cstdint>
#include <vector>

#include "models/ghost_batch_norm.h"
#include "models/network.h"

namespace batchlab::models {

struct SmallResNetOptions {
  int64_t in_channels = 1;
  int64_t num_classes = 10;
  int64_t width = 32;                    // layer1 channels; the stem has width/2, layer2 2*width
  std::vector<int64_t> blocks = {2, 2};  // BasicBlocks in layer1 and layer2 (any number of stages)
  bool zero_init_residual = false;       // bn2.weight = 0 in every block (Goyal et al. 2017)
  int64_t bn_group = 0;  // ghost batch norm over groups of this many samples; 0 = whole batch
};

class SmallResNet : public ImageClassifier {
 public:
  // Throws InputError for a width < 2, no stages, a stage without blocks, or fewer than 2 classes.
  explicit SmallResNet(SmallResNetOptions options);

  // images: float [B, C, H, W] -> logits [B, num_classes].
  torch::Tensor forward(const torch::Tensor& images) override;

  const SmallResNetOptions& options() const { return options_; }

  // Forward multiply-accumulates per sample of size height x width (convolutions and the final
  // linear layer; BN, ReLU, additions and pooling are O(activations) and left out).
  static int64_t forward_macs(const SmallResNetOptions& options, int64_t height, int64_t width);

 private:
  SmallResNetOptions options_;
  torch::nn::Conv2d conv1_{nullptr};
  GhostBatchNorm2d bn1_{nullptr};
  std::vector<torch::nn::Sequential> layers_;  // "layer1", "layer2", ...
  torch::nn::Linear fc_{nullptr};
};

}  // namespace batchlab::models
