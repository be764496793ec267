// ResNet-18/34/50/101/152 (He et al. 2016) exactly as torchvision builds them (torchvision.models
// .resnet*, v1.5: the stride of a bottleneck sits on its 3x3 convolution), so that a torchvision
// state_dict loads by name (models/state_dict.h) and a batchlab one exports back:
//
//   conv1  7x7/2, C -> 64, no bias; bn1; ReLU; 3x3/2 max pool      [B, 64, H/4, W/4]
//   layer1 BasicBlock x n1 (18/34) or Bottleneck x n1, 64 wide    [B, 64 e, H/4, W/4]
//   layer2 ... 128 wide, first block stride 2                      [B, 128 e, H/8, W/8]
//   layer3 ... 256 wide, first block stride 2                      [B, 256 e, H/16, W/16]
//   layer4 ... 512 wide, first block stride 2                      [B, 512 e, H/32, W/32]
//   global average pool, fc 512 e -> num_classes                   [B, num_classes]
//
// with e = 1 (BasicBlock) or 4 (Bottleneck) and blocks {2,2,2,2} (18), {3,4,6,3} (34, 50),
// {3,4,23,3} (101), {3,8,36,3} (152). Names: conv1, bn1, layer1..layer4 (blocks "0", "1", ...,
// each conv1/bn1/conv2/bn2[/conv3/bn3] and downsample.0/downsample.1), fc; the ReLU, pools and
// avgpool have no parameters. Initialization is torchvision's: He-normal (fan_out, ReLU gain)
// convolutions, batch-norm scale 1 and shift 0, LibTorch's default Linear (the same as PyTorch's).
//
// The "small" stem (model.stem, for 28x28 and 32x32 inputs) replaces the 7x7/2 convolution by a
// 3x3 stride-1 one (conv1 [64, C, 3, 3]) and drops the max pool, so layer1 runs at full
// resolution, as is usual for CIFAR-size images; it is not torchvision's, so a torchvision
// state_dict only fits the "imagenet" stem.
//
// Published parameter counts (1000 classes, imagenet stem): resnet18 11,689,512; resnet34
// 21,797,672; resnet50 25,557,032; resnet101 44,549,160; resnet152 60,192,808.
#pragma once

#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include <array>
#include <cstdint>
#include <string>

#include "models/ghost_batch_norm.h"
#include "models/network.h"

namespace batchlab::models {

enum class ResNetStem {
  kImageNet,  // 7x7 stride-2 convolution + 3x3 stride-2 max pool (torchvision)
  kSmall,     // 3x3 stride-1 convolution, no pool (28x28 and 32x32 images)
};

// model.stem -> stem: "imagenet", "small", or "auto" = small when neither side of the input is
// larger than 64 pixels. Throws InputError for any other name.
ResNetStem resolve_stem(const std::string& name, int64_t height, int64_t width);

struct ResNetOptions {
  int64_t depth = 50;  // 18, 34, 50, 101 or 152
  int64_t in_channels = 3;
  int64_t num_classes = 1000;
  ResNetStem stem = ResNetStem::kImageNet;
  bool zero_init_residual = false;  // last BN gamma of every block = 0 (Goyal et al. 2017)
  int64_t bn_group = 0;  // ghost batch norm over groups of this many samples; 0 = whole batch
};

class ResNet : public ImageClassifier {
 public:
  // Throws InputError for an unsupported depth, fewer than 1 input channel or 2 classes.
  explicit ResNet(ResNetOptions options);

  // images: float [B, C, H, W] -> logits [B, num_classes].
  torch::Tensor forward(const torch::Tensor& images) override;

  const ResNetOptions& options() const { return options_; }

  // Forward multiply-accumulates per sample of size height x width: convolutions and the final
  // linear layer (BN, ReLU, additions and pooling are O(activations) and left out), from shapes
  // alone. resnet50 at 224x224: 4.09 G; resnet18: 1.81 G (torchvision's published GFLOPS, which
  // count multiply-accumulates).
  static int64_t forward_macs(const ResNetOptions& options, int64_t height, int64_t width);

 private:
  ResNetOptions options_;
  torch::nn::Conv2d conv1_{nullptr};
  GhostBatchNorm2d bn1_{nullptr};
  std::array<torch::nn::Sequential, 4> layers_;  // "layer1" .. "layer4"
  torch::nn::Linear fc_{nullptr};
};

// torchvision's ResNet initialization for every ResNet here: He-normal (fan_out, ReLU)
// convolutions, batch norms at scale 1 and shift 0; linear layers keep LibTorch's default, as in
// torchvision. Used by ResNet, CifarResNet and SmallResNet.
void init_resnet_weights(torch::nn::Module& network);

}  // namespace batchlab::models
