#include "models/basic_block.h"

#include <torch/nn/functional/activation.h>
#include <torch/nn/init.h>

namespace batchlab::models {

torch::nn::Conv2d conv3x3(int64_t in, int64_t out, int64_t stride) {
  return torch::nn::Conv2d(
      torch::nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false));
}

BasicBlockImpl::BasicBlockImpl(int64_t in_channels, int64_t out_channels, int64_t stride,
                               int64_t bn_group) {
  conv1 = register_module("conv1", conv3x3(in_channels, out_channels, stride));
  bn1 = register_module("bn1", GhostBatchNorm2d(GhostBatchNormOptions{out_channels, bn_group}));
  conv2 = register_module("conv2", conv3x3(out_channels, out_channels, 1));
  bn2 = register_module("bn2", GhostBatchNorm2d(GhostBatchNormOptions{out_channels, bn_group}));
  if (stride != 1 || in_channels != out_channels) {
    downsample = register_module(
        "downsample",
        torch::nn::Sequential(
            torch::nn::Conv2d(
                torch::nn::Conv2dOptions(in_channels, out_channels, 1).stride(stride).bias(false)),
            GhostBatchNorm2d(GhostBatchNormOptions{out_channels, bn_group})));
  }
}

torch::Tensor BasicBlockImpl::forward(const torch::Tensor& x) {
  torch::Tensor out = bn1->forward(conv1->forward(x)).relu_();
  out = bn2->forward(conv2->forward(out));
  const torch::Tensor shortcut = downsample ? downsample->forward(x) : x;
  return out.add_(shortcut).relu_();
}

void BasicBlockImpl::zero_init_residual() {
  torch::NoGradGuard no_grad;
  bn2->weight.zero_();
}

int64_t BasicBlockImpl::forward_macs(int64_t in_channels, int64_t out_channels, int64_t stride,
                                     int64_t height, int64_t width) {
  const int64_t out_pixels = conv_out_size(height, stride) * conv_out_size(width, stride);
  int64_t macs = out_pixels * out_channels * in_channels * 9;  // conv1
  macs += out_pixels * out_channels * out_channels * 9;        // conv2
  if (stride != 1 || in_channels != out_channels) {
    macs += out_pixels * out_channels * in_channels;  // 1x1 shortcut
  }
  return macs;
}

}  // namespace batchlab::models
