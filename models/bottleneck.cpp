#include "models/bottleneck.h"

#include "models/basic_block.h"

namespace batchlab::models {
namespace {

torch::nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride) {
  return torch::nn::Conv2d(
      torch::nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2).bias(false));
}

GhostBatchNorm2d batch_norm(int64_t channels, int64_t bn_group) {
  return GhostBatchNorm2d(GhostBatchNormOptions{channels, bn_group});
}

}  // namespace

BottleneckImpl::BottleneckImpl(int64_t in_channels, int64_t width, int64_t stride,
                               int64_t bn_group) {
  const int64_t out_channels = width * kExpansion;
  conv1 = register_module("conv1", conv(in_channels, width, 1, 1));
  bn1 = register_module("bn1", batch_norm(width, bn_group));
  conv2 = register_module("conv2", conv(width, width, 3, stride));
  bn2 = register_module("bn2", batch_norm(width, bn_group));
  conv3 = register_module("conv3", conv(width, out_channels, 1, 1));
  bn3 = register_module("bn3", batch_norm(out_channels, bn_group));
  if (stride != 1 || in_channels != out_channels) {
    downsample = register_module("downsample",
                                 torch::nn::Sequential(conv(in_channels, out_channels, 1, stride),
                                                       batch_norm(out_channels, bn_group)));
  }
}

torch::Tensor BottleneckImpl::forward(const torch::Tensor& x) {
  torch::Tensor out = bn1->forward(conv1->forward(x)).relu_();  // [B, width, H, W]
  out = bn2->forward(conv2->forward(out)).relu_();              // [B, width, H', W']
  out = bn3->forward(conv3->forward(out));                      // [B, 4 width, H', W']
  const torch::Tensor shortcut = downsample ? downsample->forward(x) : x;
  return out.add_(shortcut).relu_();
}

void BottleneckImpl::zero_init_residual() {
  torch::NoGradGuard no_grad;
  bn3->weight.zero_();
}

int64_t BottleneckImpl::forward_macs(int64_t in_channels, int64_t width, int64_t stride,
                                     int64_t height, int64_t image_width) {
  const int64_t out_channels = width * kExpansion;
  const int64_t in_pixels = height * image_width;
  const int64_t out_pixels = conv_out_size(height, stride) * conv_out_size(image_width, stride);
  int64_t macs = in_pixels * in_channels * width;  // conv1, 1x1 at the input resolution
  macs += out_pixels * width * width * 9;          // conv2, 3x3 with the stride
  macs += out_pixels * width * out_channels;       // conv3, 1x1
  if (stride != 1 || in_channels != out_channels) {
    macs += out_pixels * in_channels * out_channels;  // 1x1 projection shortcut
  }
  return macs;
}

}  // namespace batchlab::models
