#include "models/memory_format.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/resnet.h"
#include "models/state_dict.h"

namespace batchlab::models {
namespace {

ResNet small_resnet18() {
  torch::manual_seed(0);
  ResNetOptions o;
  o.depth = 18;
  o.stem = ResNetStem::kSmall;
  o.num_classes = 10;
  return ResNet(o);
}

TEST(MemoryFormat, FourDimensionalTensorsBecomeChannelsLastInPlace) {
  ResNet net = small_resnet18();
  net.train();
  net.forward(torch::randn({2, 3, 8, 8}));  // running statistics worth keeping
  const StateDict before = state_dict(net);
  const auto* conv_impl = net.named_parameters()["layer1.0.conv1.weight"].unsafeGetTensorImpl();

  to_channels_last(net);

  int converted = 0;
  for (const auto& p : net.named_parameters()) {
    if (p.value().dim() == 4) {
      EXPECT_TRUE(p.value().is_contiguous(at::MemoryFormat::ChannelsLast)) << p.key();
      // NCHW strides are gone (a 1x1 kernel's two layouts coincide).
      if (p.value().size(2) > 1) {
        EXPECT_FALSE(p.value().is_contiguous()) << p.key();
      }
      ++converted;
    } else {
      EXPECT_TRUE(p.value().is_contiguous()) << p.key();
    }
    EXPECT_TRUE(p.value().requires_grad()) << p.key();
  }
  EXPECT_EQ(converted, 1 + 16 + 3);  // stem, two per block, three projections
  // Same tensor objects (what an optimizer holds), same values.
  EXPECT_EQ(net.named_parameters()["layer1.0.conv1.weight"].unsafeGetTensorImpl(), conv_impl);
  const StateDict after = state_dict(net);
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_TRUE(torch::equal(after[i].second, before[i].second)) << after[i].first;
  }
}

TEST(MemoryFormat, OutputsAndGradientsAreUnchanged) {
  ResNet reference = small_resnet18();
  ResNet nhwc = small_resnet18();
  to_channels_last(nhwc);
  const torch::Tensor x = torch::randn({2, 3, 12, 12});
  const torch::Tensor y_ref = reference.forward(x);
  const torch::Tensor y = nhwc.forward(x.contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(torch::allclose(y, y_ref, 1e-4, 1e-5));
  y_ref.sum().backward();
  y.sum().backward();
  const torch::Tensor g_ref = reference.named_parameters()["conv1.weight"].grad();
  const torch::Tensor g = nhwc.named_parameters()["conv1.weight"].grad();
  EXPECT_TRUE(torch::allclose(g, g_ref, 1e-3, 1e-4));
}

}  // namespace
}  // namespace batchlab::models
