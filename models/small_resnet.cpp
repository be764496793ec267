#include "models/small_resnet.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/nn/init.h>

#include <utility>

#include "core/errors.h"
#include "models/basic_block.h"
#include "models/resnet.h"

namespace batchlab::models {
namespace {

int64_t stem_channels(const SmallResNetOptions& o) { return o.width / 2; }
// Stage s (0-based) has width * 2^s channels.
int64_t stage_channels(const SmallResNetOptions& o, size_t stage) { return o.width << stage; }

void check_options(const SmallResNetOptions& o) {
  bool ok = o.in_channels >= 1 && o.num_classes >= 2 && o.width >= 2 && !o.blocks.empty();
  for (int64_t b : o.blocks) ok = ok && b >= 1;
  if (!ok) {
    throw InputError(fmt::format(
        "small_resnet: in_channels = {}, num_classes = {}, width = {}, blocks = [{}]: need >= 1 "
        "input channel, >= 2 classes, width >= 2 and at least one block in every stage",
        o.in_channels, o.num_classes, o.width, fmt::join(o.blocks, ", ")));
  }
}

}  // namespace

SmallResNet::SmallResNet(SmallResNetOptions options) : options_(std::move(options)) {
  check_options(options_);
  const int64_t stem = stem_channels(options_);
  conv1_ = register_module(
      "conv1", torch::nn::Conv2d(
                   torch::nn::Conv2dOptions(options_.in_channels, stem, 3).padding(1).bias(false)));
  bn1_ = register_module("bn1", GhostBatchNorm2d(GhostBatchNormOptions{stem, options_.bn_group}));

  int64_t in = stem;
  for (size_t s = 0; s < options_.blocks.size(); ++s) {
    const int64_t out = stage_channels(options_, s);
    torch::nn::Sequential stage;
    for (int64_t b = 0; b < options_.blocks[s]; ++b) {
      // Every stage halves the resolution in its first block.
      stage->push_back(BasicBlock(b == 0 ? in : out, out, b == 0 ? 2 : 1, options_.bn_group));
    }
    layers_.push_back(register_module(fmt::format("layer{}", s + 1), stage));
    in = out;
  }
  fc_ = register_module("fc", torch::nn::Linear(in, options_.num_classes));

  // torchvision's initialization: He-normal (fan_out) convolutions, BN at scale 1 and shift 0; the
  // linear layer keeps LibTorch's default (as torchvision does).
  torch::NoGradGuard no_grad;
  init_resnet_weights(*this);
  if (options_.zero_init_residual) {
    for (const auto& m : modules(/*include_self=*/false)) {
      if (auto* block = m->as<BasicBlockImpl>()) block->zero_init_residual();
    }
  }
}

torch::Tensor SmallResNet::forward(const torch::Tensor& images) {
  if (images.dim() != 4 || images.size(1) != options_.in_channels) {
    throw Error(fmt::format("small_resnet: expected input [B, {}, H, W], got [{}]",
                            options_.in_channels, fmt::join(images.sizes(), ", ")));
  }
  torch::Tensor x = bn1_->forward(conv1_->forward(images)).relu_();  // [B, w/2, H, W]
  for (auto& stage : layers_) x = stage->forward(x);  // [B, w*2^s, H/2^(s+1), W/2^(s+1)]
  x = x.mean({2, 3});                                 // global average pool: [B, channels]
  return fc_->forward(x);                             // [B, num_classes]
}

int64_t SmallResNet::forward_macs(const SmallResNetOptions& o, int64_t height, int64_t width) {
  check_options(o);
  const int64_t stem = stem_channels(o);
  int64_t macs = height * width * stem * o.in_channels * 9;  // conv1, stride 1
  int64_t in = stem;
  for (size_t s = 0; s < o.blocks.size(); ++s) {
    const int64_t out = stage_channels(o, s);
    for (int64_t b = 0; b < o.blocks[s]; ++b) {
      const int64_t stride = b == 0 ? 2 : 1;
      macs += BasicBlockImpl::forward_macs(b == 0 ? in : out, out, stride, height, width);
      height = conv_out_size(height, stride);
      width = conv_out_size(width, stride);
    }
    in = out;
  }
  return macs + in * o.num_classes;  // fc
}

}  // namespace batchlab::models
