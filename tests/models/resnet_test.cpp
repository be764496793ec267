#include "models/resnet.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "core/errors.h"
#include "models/basic_block.h"
#include "models/bottleneck.h"
#include "models/registry.h"
#include "models/state_dict.h"

namespace batchlab::models {
namespace {

ResNetOptions options_for(int64_t depth, ResNetStem stem = ResNetStem::kImageNet,
                          int64_t in_channels = 3, int64_t num_classes = 1000) {
  ResNetOptions o;
  o.depth = depth;
  o.stem = stem;
  o.in_channels = in_channels;
  o.num_classes = num_classes;
  return o;
}

TEST(ResNet, ParameterCountsArePublishedOnes) {
  // torchvision's model cards (1000 classes, ImageNet stem).
  EXPECT_EQ(count_parameters(ResNet(options_for(18))), 11689512);
  EXPECT_EQ(count_parameters(ResNet(options_for(34))), 21797672);
  EXPECT_EQ(count_parameters(ResNet(options_for(50))), 25557032);
  EXPECT_EQ(count_parameters(ResNet(options_for(101))), 44549160);
  EXPECT_EQ(count_parameters(ResNet(options_for(152))), 60192808);
}

TEST(ResNet, StateDictNamesAndOrderFollowTorchvision) {
  const StateDict entries = state_dict(ResNet(options_for(50)));
  EXPECT_EQ(entries.size(), 320u);  // len(torchvision.models.resnet50().state_dict())
  const std::vector<std::string> head = {
      "conv1.weight",          "bn1.weight",          "bn1.bias",
      "bn1.running_mean",      "bn1.running_var",     "bn1.num_batches_tracked",
      "layer1.0.conv1.weight", "layer1.0.bn1.weight", "layer1.0.bn1.bias"};
  for (size_t i = 0; i < head.size(); ++i) EXPECT_EQ(entries[i].first, head[i]);
  EXPECT_EQ(entries[entries.size() - 2].first, "fc.weight");
  EXPECT_EQ(entries.back().first, "fc.bias");

  ResNet net(options_for(50));
  const auto params = net.named_parameters();
  EXPECT_EQ(params["layer1.0.conv3.weight"].sizes(), (std::vector<int64_t>{256, 64, 1, 1}));
  EXPECT_EQ(params["layer1.0.downsample.0.weight"].sizes(), (std::vector<int64_t>{256, 64, 1, 1}));
  EXPECT_EQ(params["layer4.2.bn3.weight"].sizes(), (std::vector<int64_t>{2048}));
  EXPECT_EQ(params["fc.weight"].sizes(), (std::vector<int64_t>{1000, 2048}));
  EXPECT_EQ(params.find("layer1.1.downsample.0.weight"), nullptr);  // identity shortcut
  EXPECT_EQ(params.find("conv1.bias"), nullptr);
  EXPECT_EQ(params.find("layer2.0.conv2.bias"), nullptr);
  EXPECT_EQ(net.named_buffers()["layer3.5.bn2.num_batches_tracked"].scalar_type(), torch::kLong);
}

TEST(ResNet, BottleneckIsV15WithTheStrideOnThe3x3) {
  ResNet net(options_for(50));
  for (const auto& m : net.named_modules("", /*include_self=*/false)) {
    if (m.key() != "layer2.0") continue;
    auto* block = m.value()->as<BottleneckImpl>();
    ASSERT_NE(block, nullptr);
    EXPECT_EQ(block->conv1->options.stride()->at(0), 1);
    EXPECT_EQ(block->conv2->options.stride()->at(0), 2);
    EXPECT_EQ(block->conv3->options.stride()->at(0), 1);
    EXPECT_EQ(block->downsample[0]->as<torch::nn::Conv2dImpl>()->options.stride()->at(0), 2);
    const auto* bn = block->bn1.get();
    EXPECT_DOUBLE_EQ(bn->options.eps, 1e-5);
    EXPECT_DOUBLE_EQ(bn->options.momentum, 0.1);
    return;
  }
  FAIL() << "no layer2.0";
}

TEST(ResNet, ImageNetStemOutputShapes) {
  ResNet net(options_for(18, ResNetStem::kImageNet, 3, 7));
  net.eval();
  torch::NoGradGuard no_grad;
  EXPECT_EQ(net.forward(torch::randn({2, 3, 64, 64})).sizes(), (std::vector<int64_t>{2, 7}));
  // Odd sizes round up at every stride-2 step (97 -> 49 -> 25 -> 13 -> 7 -> 4).
  EXPECT_EQ(net.forward(torch::randn({1, 3, 97, 61})).sizes(), (std::vector<int64_t>{1, 7}));
}

TEST(ResNet, SmallStemFor28x28And32x32) {
  EXPECT_EQ(resolve_stem("auto", 28, 28), ResNetStem::kSmall);
  EXPECT_EQ(resolve_stem("auto", 32, 32), ResNetStem::kSmall);
  EXPECT_EQ(resolve_stem("auto", 64, 64), ResNetStem::kSmall);
  EXPECT_EQ(resolve_stem("auto", 65, 64), ResNetStem::kImageNet);
  EXPECT_EQ(resolve_stem("auto", 224, 224), ResNetStem::kImageNet);
  EXPECT_EQ(resolve_stem("imagenet", 28, 28), ResNetStem::kImageNet);
  EXPECT_EQ(resolve_stem("small", 224, 224), ResNetStem::kSmall);
  // Other names are rejected by the schema (model.stem); here they mean validation was skipped.
  try {
    resolve_stem("tiny", 28, 28);
    ADD_FAILURE() << "expected an internal error";
  } catch (const InputError& e) {
    ADD_FAILURE() << "reported as bad input: " << e.what();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("internal error: resolve_stem"), std::string::npos);
  }

  ResNet gray(options_for(18, ResNetStem::kSmall, 1, 10));
  EXPECT_EQ(gray.named_parameters()["conv1.weight"].sizes(), (std::vector<int64_t>{64, 1, 3, 3}));
  gray.train();
  // Fashion-MNIST: 28 -> 28 (no pool) -> 14 -> 7 -> 4 before the average pool.
  EXPECT_EQ(gray.forward(torch::randn({2, 1, 28, 28})).sizes(), (std::vector<int64_t>{2, 10}));

  ResNet color(options_for(50, ResNetStem::kSmall, 3, 10));
  color.eval();
  torch::NoGradGuard no_grad;
  EXPECT_EQ(color.forward(torch::randn({2, 3, 32, 32})).sizes(), (std::vector<int64_t>{2, 10}));
  // Small stem: 64 x 3 x 9 weights instead of 64 x 3 x 49, and a 1000 -> 10 class head.
  EXPECT_EQ(count_parameters(color), 25557032 - 64 * 3 * (49 - 9) - 2048 * 990 - 990);
  // A wrong channel count is a programming error with the shapes named.
  EXPECT_THROW(color.forward(torch::randn({2, 1, 32, 32})), Error);
}

// Every BN of `net`: {name, is the last BN of a block}.
std::vector<std::pair<std::string, bool>> batch_norms(ResNet& net) {
  std::vector<std::pair<std::string, bool>> out;
  for (const auto& m : net.named_modules("", /*include_self=*/false)) {
    if (m.value()->as<GhostBatchNorm2dImpl>() == nullptr) continue;
    const std::string& name = m.key();
    const bool last = name.rfind("layer", 0) == 0 && name.find("downsample") == std::string::npos &&
                      ((net.options().depth >= 50 && name.substr(name.size() - 3) == "bn3") ||
                       (net.options().depth < 50 && name.substr(name.size() - 3) == "bn2"));
    out.emplace_back(name, last);
  }
  return out;
}

TEST(ResNet, ZeroInitResidualZeroesExactlyTheLastBnOfEveryBlock) {
  for (int64_t depth : {18, 50}) {
    ResNetOptions o = options_for(depth, ResNetStem::kSmall, 3, 10);
    o.zero_init_residual = true;
    ResNet net(o);
    int zeroed = 0;
    for (const auto& [name, last] : batch_norms(net)) {
      const torch::Tensor gamma = net.named_parameters()[name + ".weight"];
      if (last) {
        ++zeroed;
        EXPECT_EQ(gamma.abs().max().item<float>(), 0.0f) << name;
      } else {
        EXPECT_TRUE(torch::all(gamma == 1).item<bool>()) << name;
      }
    }
    EXPECT_EQ(zeroed, depth == 18 ? 8 : 16) << "one per block";
  }
  // Without the option every gamma is 1.
  ResNet plain(options_for(18, ResNetStem::kSmall, 3, 10));
  for (const auto& [name, last] : batch_norms(plain)) {
    EXPECT_TRUE(torch::all(plain.named_parameters()[name + ".weight"] == 1).item<bool>()) << name;
  }
}

TEST(ResNet, ZeroInitBlockIsTheIdentityOnItsShortcut) {
  // Train mode: the residual branch is bn3(...) = 0 * normalized + 0, whatever the batch.
  const torch::Tensor x = torch::randn({4, 256, 6, 6}).relu();  // post-ReLU, as blocks see it
  Bottleneck identity(256, 64, 1);
  identity->zero_init_residual();
  EXPECT_TRUE(torch::allclose(identity->forward(x), x));

  Bottleneck projecting(256, 128, 2);
  projecting->zero_init_residual();
  const torch::Tensor expected = projecting->downsample->forward(x).relu();
  EXPECT_TRUE(torch::allclose(projecting->forward(x), expected));

  BasicBlock basic(64, 64, 1);
  basic->zero_init_residual();
  const torch::Tensor y = torch::randn({2, 64, 5, 5}).relu();
  EXPECT_TRUE(torch::allclose(basic->forward(y), y));
}

TEST(ResNet, GhostBatchNormReachesEveryBatchNorm) {
  ResNetOptions o = options_for(18, ResNetStem::kSmall, 3, 10);
  o.bn_group = 2;
  torch::manual_seed(0);
  ResNet ghost(o);
  int norms = 0;
  for (const auto& m : ghost.modules(/*include_self=*/false)) {
    if (const auto* bn = m->as<GhostBatchNorm2dImpl>()) {
      EXPECT_EQ(bn->options.group, 2);
      ++norms;
    }
  }
  EXPECT_EQ(norms, 1 + 8 * 2 + 3);  // stem, two per block, three projections

  // Statistics per group of 2: a batch of 4 gives what two batches of 2 give.
  ResNet whole(options_for(18, ResNetStem::kSmall, 3, 10));
  load_state_dict(whole, state_dict(ghost), "ghost");
  ghost.train();
  whole.train();
  const torch::Tensor x = torch::randn({4, 3, 12, 12});
  const torch::Tensor together = ghost.forward(x);
  const torch::Tensor apart =
      torch::cat({whole.forward(x.slice(0, 0, 2)), whole.forward(x.slice(0, 2, 4))});
  EXPECT_TRUE(torch::allclose(together, apart, 1e-4, 1e-5));
}

TEST(ResNet, RejectsUnknownDepthsAndSizes) {
  EXPECT_THROW(ResNet(options_for(42)), InputError);
  EXPECT_THROW(ResNet(options_for(18, ResNetStem::kSmall, 0, 10)), InputError);
  EXPECT_THROW(ResNet(options_for(18, ResNetStem::kSmall, 3, 1)), InputError);
  EXPECT_THROW(ResNet::forward_macs(options_for(20), 32, 32), InputError);
}

TEST(ResNet, ForwardMacsMatchTorchvisionsPublishedCounts) {
  // torchvision's model cards list GFLOPS that count multiply-accumulates (224x224, 1000 classes).
  const auto gmacs = [](int64_t depth) {
    return static_cast<double>(ResNet::forward_macs(options_for(depth), 224, 224)) / 1e9;
  };
  EXPECT_NEAR(gmacs(18), 1.81, 0.005);
  EXPECT_NEAR(gmacs(34), 3.66, 0.005);
  EXPECT_NEAR(gmacs(50), 4.09, 0.005);
  EXPECT_NEAR(gmacs(101), 7.80, 0.005);
  EXPECT_NEAR(gmacs(152), 11.51, 0.005);
}

}  // namespace
}  // namespace batchlab::models
