#include "models/cifar_resnet.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/nn/init.h>

#include <utility>

#include "core/errors.h"
#include "models/basic_block.h"
#include "models/resnet.h"

namespace batchlab::models {
namespace {

constexpr std::array<int64_t, 3> kStageChannels = {16, 32, 64};

// Blocks per stage, n = (depth - 2) / 6.
int64_t blocks_per_stage(const CifarResNetOptions& o) {
  if (o.depth < 8 || (o.depth - 2) % 6 != 0) {
    throw InputError(fmt::format(
        "cifar resnet depth {}: must be 6n + 2 with n >= 1 (20, 32, 44, 56, 110)", o.depth));
  }
  if (o.in_channels < 1 || o.num_classes < 2) {
    throw InputError(fmt::format(
        "resnet{}: in_channels = {}, num_classes = {}: need >= 1 input channel and >= 2 classes",
        o.depth, o.in_channels, o.num_classes));
  }
  return (o.depth - 2) / 6;
}

}  // namespace

CifarBlockImpl::CifarBlockImpl(int64_t in_channels, int64_t out_channels, int64_t stride,
                               int64_t bn_group)
    : in_channels_(in_channels), out_channels_(out_channels), stride_(stride) {
  if (out_channels < in_channels || (stride == 1 && out_channels != in_channels)) {
    throw Error(
        fmt::format("cifar block {} -> {} channels at stride {}: an identity shortcut "
                    "needs as many or more output channels, and a change only at stride 2",
                    in_channels, out_channels, stride));
  }
  conv1 = register_module("conv1", conv3x3(in_channels, out_channels, stride));
  bn1 = register_module("bn1", GhostBatchNorm2d(GhostBatchNormOptions{out_channels, bn_group}));
  conv2 = register_module("conv2", conv3x3(out_channels, out_channels, 1));
  bn2 = register_module("bn2", GhostBatchNorm2d(GhostBatchNormOptions{out_channels, bn_group}));
}

torch::Tensor CifarBlockImpl::forward(const torch::Tensor& x) {
  torch::Tensor out = bn1->forward(conv1->forward(x)).relu_();  // [B, out, H', W']
  out = bn2->forward(conv2->forward(out));
  if (stride_ == 1 && in_channels_ == out_channels_) return out.add_(x).relu_();
  using torch::indexing::None;
  using torch::indexing::Slice;
  // Option A: subsample like the strided convolution, then zero channels [in, out).
  const torch::Tensor sampled = x.index({Slice(), Slice(), Slice(None, None, stride_),
                                         Slice(None, None, stride_)});  // [B, in, H', W']
  out.narrow(1, 0, in_channels_).add_(sampled);
  return out.relu_();
}

void CifarBlockImpl::zero_init_residual() {
  torch::NoGradGuard no_grad;
  bn2->weight.zero_();
}

CifarResNet::CifarResNet(CifarResNetOptions options) : options_(std::move(options)) {
  const int64_t n = blocks_per_stage(options_);
  const int64_t g = options_.bn_group;
  conv1_ = register_module("conv1", conv3x3(options_.in_channels, kStageChannels[0], 1));
  bn1_ = register_module("bn1", GhostBatchNorm2d(GhostBatchNormOptions{kStageChannels[0], g}));
  int64_t in = kStageChannels[0];
  for (size_t s = 0; s < layers_.size(); ++s) {
    torch::nn::Sequential stage;
    for (int64_t b = 0; b < n; ++b) {
      stage->push_back(CifarBlock(in, kStageChannels[s], stage_stride(s, b), g));
      in = kStageChannels[s];
    }
    layers_[s] = register_module(fmt::format("layer{}", s + 1), stage);
  }
  fc_ = register_module("fc", torch::nn::Linear(in, options_.num_classes));

  torch::NoGradGuard no_grad;
  init_resnet_weights(*this);
  if (options_.zero_init_residual) {
    for (const auto& m : modules(/*include_self=*/false)) {
      if (auto* block = m->as<CifarBlockImpl>()) block->zero_init_residual();
    }
  }
}

torch::Tensor CifarResNet::forward(const torch::Tensor& images) {
  if (images.dim() != 4 || images.size(1) != options_.in_channels) {
    throw Error(fmt::format("resnet{}: expected input [B, {}, H, W], got [{}]", options_.depth,
                            options_.in_channels, fmt::join(images.sizes(), ", ")));
  }
  torch::Tensor x = bn1_->forward(conv1_->forward(images)).relu_();  // [B, 16, H, W]
  for (auto& stage : layers_) x = stage->forward(x);                 // [B, 64, H/4, W/4]
  x = x.mean({2, 3});                                                // [B, 64]
  return fc_->forward(x);                                            // [B, num_classes]
}

int64_t CifarResNet::forward_macs(const CifarResNetOptions& o, int64_t height, int64_t width) {
  const int64_t n = blocks_per_stage(o);
  int64_t macs = height * width * kStageChannels[0] * o.in_channels * 9;  // conv1
  int64_t in = kStageChannels[0];
  for (size_t s = 0; s < kStageChannels.size(); ++s) {
    const int64_t out = kStageChannels[s];
    for (int64_t b = 0; b < n; ++b) {
      const int64_t stride = stage_stride(s, b);
      height = conv_out_size(height, stride);
      width = conv_out_size(width, stride);
      macs += height * width * out * (in + out) * 9;  // conv1 (in -> out), conv2 (out -> out)
      in = out;
    }
  }
  return macs + in * o.num_classes;  // fc
}

}  // namespace batchlab::models
