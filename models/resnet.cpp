#include "models/resnet.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/nn/functional/pooling.h>
#include <torch/nn/init.h>

#include <utility>

#include "core/config/preconditions.h"
#include "core/errors.h"
#include "models/basic_block.h"
#include "models/bottleneck.h"

namespace batchlab::models {
namespace {

constexpr int64_t kStemChannels = 64;
constexpr std::array<int64_t, 4> kStageWidths = {64, 128, 256, 512};

struct Layout {
  bool bottleneck = false;
  std::array<int64_t, 4> blocks{};
};

// Throws InputError for a depth torchvision does not define.
Layout layout_of(int64_t depth) {
  switch (depth) {
    case 18:
      return {false, {2, 2, 2, 2}};
    case 34:
      return {false, {3, 4, 6, 3}};
    case 50:
      return {true, {3, 4, 6, 3}};
    case 101:
      return {true, {3, 4, 23, 3}};
    case 152:
      return {true, {3, 8, 36, 3}};
    default:
      throw InputError(
          fmt::format("resnet depth {}: supported depths are 18, 34, 50, 101 and 152", depth));
  }
}

void check_options(const ResNetOptions& o) {
  layout_of(o.depth);
  if (o.in_channels < 1 || o.num_classes < 2) {
    throw InputError(fmt::format(
        "resnet{}: in_channels = {}, num_classes = {}: need >= 1 input channel and >= 2 classes",
        o.depth, o.in_channels, o.num_classes));
  }
}

int64_t expansion(const Layout& layout) {
  return layout.bottleneck ? BottleneckImpl::kExpansion : 1;
}

}  // namespace

ResNetStem resolve_stem(const std::string& name, int64_t height, int64_t width) {
  if (name == "imagenet") return ResNetStem::kImageNet;
  if (name == "small") return ResNetStem::kSmall;
  if (name == "auto") {
    return height <= 64 && width <= 64 ? ResNetStem::kSmall : ResNetStem::kImageNet;
  }
  // The schema's model.stem rule (core/config) rejects any other name when the config is read.
  config::internal_error("resolve_stem", fmt::format("model.stem = \"{}\" is not a stem", name));
}

ResNet::ResNet(ResNetOptions options) : options_(std::move(options)) {
  check_options(options_);
  const Layout layout = layout_of(options_.depth);
  const int64_t g = options_.bn_group;
  const bool imagenet = options_.stem == ResNetStem::kImageNet;
  conv1_ = register_module(
      "conv1", torch::nn::Conv2d(
                   torch::nn::Conv2dOptions(options_.in_channels, kStemChannels, imagenet ? 7 : 3)
                       .stride(imagenet ? 2 : 1)
                       .padding(imagenet ? 3 : 1)
                       .bias(false)));
  bn1_ = register_module("bn1", GhostBatchNorm2d(GhostBatchNormOptions{kStemChannels, g}));

  int64_t in = kStemChannels;
  for (size_t s = 0; s < layers_.size(); ++s) {
    torch::nn::Sequential stage;
    for (int64_t b = 0; b < layout.blocks[s]; ++b) {
      const int64_t stride = stage_stride(s, b);
      if (layout.bottleneck) {
        stage->push_back(Bottleneck(in, kStageWidths[s], stride, g));
      } else {
        stage->push_back(BasicBlock(in, kStageWidths[s], stride, g));
      }
      in = kStageWidths[s] * expansion(layout);
    }
    layers_[s] = register_module(fmt::format("layer{}", s + 1), stage);
  }
  fc_ = register_module("fc", torch::nn::Linear(in, options_.num_classes));

  torch::NoGradGuard no_grad;
  init_resnet_weights(*this);
  if (options_.zero_init_residual) {
    for (const auto& m : modules(/*include_self=*/false)) {
      if (auto* basic = m->as<BasicBlockImpl>()) basic->zero_init_residual();
      if (auto* bottleneck = m->as<BottleneckImpl>()) bottleneck->zero_init_residual();
    }
  }
}

torch::Tensor ResNet::forward(const torch::Tensor& images) {
  if (images.dim() != 4 || images.size(1) != options_.in_channels) {
    throw Error(fmt::format("resnet{}: expected input [B, {}, H, W], got [{}]", options_.depth,
                            options_.in_channels, fmt::join(images.sizes(), ", ")));
  }
  namespace F = torch::nn::functional;
  torch::Tensor x = bn1_->forward(conv1_->forward(images)).relu_();  // [B, 64, H/2, W/2]
  if (options_.stem == ResNetStem::kImageNet) {
    x = F::max_pool2d(x, F::MaxPool2dFuncOptions(3).stride(2).padding(1));  // [B, 64, H/4, W/4]
  }
  for (auto& stage : layers_) x = stage->forward(x);     // [B, 512 e, H/32, W/32]
  x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);  // [B, 512 e]
  return fc_->forward(x);                                // [B, num_classes]
}

int64_t ResNet::forward_macs(const ResNetOptions& o, int64_t height, int64_t width) {
  check_options(o);
  const Layout layout = layout_of(o.depth);
  int64_t macs = 0;
  if (o.stem == ResNetStem::kImageNet) {
    // 7x7/2 convolution (padding 3) and 3x3/2 max pool (padding 1) both map n to (n - 1) / 2 + 1.
    height = conv_out_size(height, 2);
    width = conv_out_size(width, 2);
    macs += height * width * kStemChannels * o.in_channels * 49;
    height = conv_out_size(height, 2);
    width = conv_out_size(width, 2);
  } else {
    macs += height * width * kStemChannels * o.in_channels * 9;
  }
  int64_t in = kStemChannels;
  for (size_t s = 0; s < kStageWidths.size(); ++s) {
    for (int64_t b = 0; b < layout.blocks[s]; ++b) {
      const int64_t stride = stage_stride(s, b);
      const int64_t out = kStageWidths[s] * expansion(layout);
      macs += layout.bottleneck
                  ? BottleneckImpl::forward_macs(in, kStageWidths[s], stride, height, width)
                  : BasicBlockImpl::forward_macs(in, out, stride, height, width);
      height = conv_out_size(height, stride);
      width = conv_out_size(width, stride);
      in = out;
    }
  }
  return macs + in * o.num_classes;  // fc
}

void init_resnet_weights(torch::nn::Module& network) {
  torch::NoGradGuard no_grad;
  for (const auto& m : network.modules(/*include_self=*/false)) {
    if (auto* conv = m->as<torch::nn::Conv2d>()) {
      torch::nn::init::kaiming_normal_(conv->weight, 0.0, torch::kFanOut, torch::kReLU);
    } else if (auto* bn = m->as<GhostBatchNorm2dImpl>()) {
      torch::nn::init::ones_(bn->weight);
      torch::nn::init::zeros_(bn->bias);
    }
  }
}

}  // namespace batchlab::models
