#include "models/small_resnet.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

#include "core/errors.h"
#include "models/registry.h"

namespace batchlab::models {
namespace {

TEST(SmallResNet, OutputShapeFor28x28Grayscale) {
  torch::manual_seed(0);
  SmallResNet net(SmallResNetOptions{});
  const torch::Tensor logits = net.forward(torch::randn({4, 1, 28, 28}));
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{4, 10}));
  EXPECT_EQ(logits.scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::isfinite(logits).all().item<bool>());
}

TEST(SmallResNet, OtherInputShapesAndClasses) {
  SmallResNetOptions o;
  o.in_channels = 3;
  o.num_classes = 7;
  o.width = 8;
  o.blocks = {1, 2, 1};
  SmallResNet net(o);
  net.eval();
  // Odd sizes: every stride-2 stage rounds up (33 -> 17 -> 9 -> 5).
  EXPECT_EQ(net.forward(torch::randn({2, 3, 33, 20})).sizes(), (std::vector<int64_t>{2, 7}));
}

TEST(SmallResNet, ParameterCountIsPinned) {
  // Default (width 32, blocks {2, 2}) on 1x28x28, 10 classes. A change here changes every
  // Fashion-MNIST result: update docs/ with the new measurements.
  SmallResNet net(SmallResNetOptions{});
  EXPECT_EQ(count_parameters(net), 165626);
  EXPECT_EQ(SmallResNet::forward_macs(SmallResNetOptions{}, 28, 28), 12958592);
}

TEST(SmallResNet, ParameterNamesFollowTorchvision) {
  SmallResNet net(SmallResNetOptions{});
  const auto params = net.named_parameters();
  for (const std::string name :
       {"conv1.weight", "bn1.weight", "bn1.bias", "layer1.0.conv1.weight", "layer1.0.bn2.weight",
        "layer1.0.downsample.0.weight", "layer1.0.downsample.1.bias", "layer2.0.conv2.weight",
        "fc.weight", "fc.bias"}) {
    EXPECT_NE(params.find(name), nullptr) << name;
  }
  // Convolutions carry no bias: the BN after each has its own shift.
  EXPECT_EQ(params.find("conv1.bias"), nullptr);
  EXPECT_NE(net.named_buffers().find("bn1.running_mean"), nullptr);
}

TEST(SmallResNet, ZeroInitResidualZeroesTheLastBnOfEachBlock) {
  SmallResNetOptions o;
  o.blocks = {2, 2};
  o.zero_init_residual = true;
  SmallResNet zeroed(o);
  int blocks = 0;
  for (const auto& p : zeroed.named_parameters()) {
    const std::string& name = p.key();
    if (name.find(".bn2.weight") != std::string::npos) {
      ++blocks;
      EXPECT_EQ(p.value().abs().max().item<float>(), 0.0f) << name;
    } else if (name.find("bn") != std::string::npos && name.find(".weight") != std::string::npos) {
      EXPECT_TRUE(torch::equal(p.value(), torch::ones_like(p.value()))) << name;
    }
  }
  EXPECT_EQ(blocks, 4);

  o.zero_init_residual = false;
  SmallResNet plain(o);
  const torch::Tensor gamma = plain.named_parameters()["layer2.1.bn2.weight"];
  EXPECT_TRUE(torch::equal(gamma, torch::ones_like(gamma)));
}

TEST(SmallResNet, TrainsOneStepWithGradientsEverywhere) {
  torch::manual_seed(1);
  SmallResNet net(SmallResNetOptions{});
  const torch::Tensor x = torch::randn({8, 1, 28, 28});
  const torch::Tensor y = torch::randint(0, 10, {8}, torch::kLong);
  torch::nn::functional::cross_entropy(net.forward(x), y).backward();
  for (const auto& p : net.named_parameters()) {
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    EXPECT_TRUE(torch::isfinite(p.value().grad()).all().item<bool>()) << p.key();
  }
}

TEST(SmallResNet, ForwardMacsMatchTheLayers) {
  // Independent count for width 16, blocks {1, 1} on 1x28x28: stem 8 ch at 28x28; layer1 16 ch at
  // 14x14 (conv 8->16 s2, conv 16->16, 1x1 8->16); layer2 32 ch at 7x7; fc 32->10.
  SmallResNetOptions o;
  o.width = 16;
  o.blocks = {1, 1};
  const int64_t stem = 28 * 28 * 8 * 1 * 9;
  const int64_t layer1 = 14 * 14 * (16 * 8 * 9 + 16 * 16 * 9 + 16 * 8);
  const int64_t layer2 = 7 * 7 * (32 * 16 * 9 + 32 * 32 * 9 + 32 * 16);
  const int64_t fc = 32 * 10;
  EXPECT_EQ(SmallResNet::forward_macs(o, 28, 28), stem + layer1 + layer2 + fc);
  // A second block per stage adds two stride-1 convolutions at the stage's resolution.
  o.blocks = {2, 2};
  EXPECT_EQ(SmallResNet::forward_macs(o, 28, 28),
            stem + layer1 + layer2 + fc + 14 * 14 * 2 * 16 * 16 * 9 + 7 * 7 * 2 * 32 * 32 * 9);
}

TEST(SmallResNet, RejectsWrongInputAndBadOptions) {
  SmallResNet net(SmallResNetOptions{});
  EXPECT_THROW(net.forward(torch::randn({2, 3, 28, 28})), Error);
  EXPECT_THROW(net.forward(torch::randn({1, 28, 28})), Error);
  SmallResNetOptions o;
  o.blocks = {1, 0};
  EXPECT_THROW(SmallResNet{o}, InputError);
}

}  // namespace
}  // namespace batchlab::models
