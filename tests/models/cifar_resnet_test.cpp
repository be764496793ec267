#include "models/cifar_resnet.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "core/errors.h"
#include "models/registry.h"

namespace batchlab::models {
namespace {

CifarResNetOptions cifar_options(int64_t depth) {
  CifarResNetOptions o;
  o.depth = depth;
  return o;
}

TEST(CifarResNet, ParameterCountsAreThePapers) {
  // He et al. 2016, Table 6: 0.27M, 0.46M, 0.85M. Exact, by hand: conv1 432 + bn 32; a 16-16
  // block 4,672; the 16-32 block 13,952, a 32-32 block 18,560; the 32-64 block 55,552, a 64-64
  // block 73,984; fc 650. ResNet-20 = 464 + 3 x 4,672 + 13,952 + 2 x 18,560 + 55,552 +
  // 2 x 73,984 + 650.
  EXPECT_EQ(count_parameters(CifarResNet(cifar_options(20))), 269722);
  EXPECT_EQ(count_parameters(CifarResNet(cifar_options(32))), 464154);
  EXPECT_EQ(count_parameters(CifarResNet(cifar_options(56))), 853018);
}

TEST(CifarResNet, OutputShapes) {
  CifarResNet net(cifar_options(20));
  EXPECT_EQ(net.forward(torch::randn({2, 3, 32, 32})).sizes(), (std::vector<int64_t>{2, 10}));
  net.eval();
  torch::NoGradGuard no_grad;
  EXPECT_EQ(net.forward(torch::randn({1, 3, 33, 17})).sizes(), (std::vector<int64_t>{1, 10}));

  CifarResNetOptions gray = cifar_options(32);
  gray.in_channels = 1;
  gray.num_classes = 100;
  CifarResNet mnist(gray);
  mnist.eval();
  EXPECT_EQ(mnist.forward(torch::randn({3, 1, 28, 28})).sizes(), (std::vector<int64_t>{3, 100}));
  EXPECT_THROW(mnist.forward(torch::randn({3, 3, 28, 28})), Error);
}

TEST(CifarResNet, NamesAndNoProjectionShortcuts) {
  CifarResNet net(cifar_options(56));
  const auto params = net.named_parameters();
  EXPECT_EQ(params["conv1.weight"].sizes(), (std::vector<int64_t>{16, 3, 3, 3}));
  EXPECT_EQ(params["layer2.0.conv1.weight"].sizes(), (std::vector<int64_t>{32, 16, 3, 3}));
  EXPECT_EQ(params["layer3.8.bn2.weight"].sizes(), (std::vector<int64_t>{64}));
  EXPECT_EQ(params["fc.weight"].sizes(), (std::vector<int64_t>{10, 64}));
  for (const auto& p : params) {
    EXPECT_EQ(p.key().find("downsample"), std::string::npos) << p.key();
  }
}

TEST(CifarResNet, OptionAShortcutSubsamplesAndPadsWithZeros) {
  CifarBlock block(16, 32, 2);
  block->zero_init_residual();  // the residual branch is 0: the output is the shortcut alone
  const torch::Tensor x = torch::randn({2, 16, 7, 7});
  const torch::Tensor y = block->forward(x);
  ASSERT_EQ(y.sizes(), (std::vector<int64_t>{2, 32, 4, 4}));
  using torch::indexing::None;
  using torch::indexing::Slice;
  const torch::Tensor sampled =
      x.index({Slice(), Slice(), Slice(None, None, 2), Slice(None, None, 2)});
  EXPECT_TRUE(torch::allclose(y.slice(1, 0, 16), sampled.relu()));
  EXPECT_EQ(y.slice(1, 16, 32).abs().max().item<float>(), 0.0f);

  CifarBlock same(16, 16, 1);
  same->zero_init_residual();
  const torch::Tensor z = torch::randn({2, 16, 5, 5}).relu();
  EXPECT_TRUE(torch::allclose(same->forward(z), z));
  EXPECT_THROW(CifarBlock(32, 16, 2), Error);
}

TEST(CifarResNet, ZeroInitResidualAndGhostBatchNorm) {
  CifarResNetOptions o = cifar_options(20);
  o.zero_init_residual = true;
  o.bn_group = 4;
  CifarResNet net(o);
  int zeroed = 0;
  for (const auto& p : net.named_parameters()) {
    const std::string& name = p.key();
    if (name.rfind("layer", 0) == 0 && name.find("bn2.weight") != std::string::npos) {
      EXPECT_EQ(p.value().abs().max().item<float>(), 0.0f) << name;
      ++zeroed;
    } else if (name.find("bn") != std::string::npos && name.find(".weight") != std::string::npos) {
      EXPECT_TRUE(torch::all(p.value() == 1).item<bool>()) << name;
    }
  }
  EXPECT_EQ(zeroed, 9);
  for (const auto& m : net.modules(/*include_self=*/false)) {
    if (const auto* bn = m->as<GhostBatchNorm2dImpl>()) {
      EXPECT_EQ(bn->options.group, 4);
    }
  }
  EXPECT_EQ(net.forward(torch::randn({8, 3, 32, 32})).size(0), 8);
}

TEST(CifarResNet, RejectsDepthsThatAreNot6nPlus2) {
  EXPECT_THROW(CifarResNet(cifar_options(18)), InputError);
  EXPECT_THROW(CifarResNet(cifar_options(2)), InputError);
  EXPECT_THROW(CifarResNet::forward_macs(cifar_options(21), 32, 32), InputError);
}

TEST(CifarResNet, ForwardMacs) {
  // ResNet-20 at 32x32: conv1 442,368 + stage 1 14,155,776 + stages 2 and 3 12,976,128 each + fc
  // 640 (the often quoted 40.8 M also counts BN and the additions).
  EXPECT_EQ(CifarResNet::forward_macs(cifar_options(20), 32, 32), 40551040);
  EXPECT_LT(CifarResNet::forward_macs(cifar_options(20), 32, 32),
            CifarResNet::forward_macs(cifar_options(56), 32, 32));
}

}  // namespace
}  // namespace batchlab::models
