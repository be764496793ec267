#include "models/registry.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

#include "core/errors.h"
#include "models/small_resnet.h"

namespace batchlab::models {
namespace {

TEST(ModelRegistry, ListsTheSmallResNet) {
  const auto models = list_models();
  ASSERT_FALSE(models.empty());
  EXPECT_EQ(models.front().name, "small_resnet");
  EXPECT_FALSE(models.front().description.empty());
  // Priced at Fashion-MNIST's shape by `batchlab models`.
  EXPECT_EQ(models.front().channels, 1);
  EXPECT_EQ(models.front().height, 28);
  EXPECT_EQ(models.front().num_classes, 10);
}

TEST(ModelRegistry, BuildsFromTheConfig) {
  config::ModelConfig cfg;  // arch small_resnet, width 32
  const auto net = make_image_classifier(cfg, 1, 28, 28, 10);
  ASSERT_NE(net, nullptr);
  EXPECT_EQ(net->forward(torch::randn({3, 1, 28, 28})).sizes(), (std::vector<int64_t>{3, 10}));
  EXPECT_EQ(count_parameters(*net), count_parameters(SmallResNet(SmallResNetOptions{})));

  cfg.width = 16;
  cfg.zero_init_residual = true;
  const auto thin = make_image_classifier(cfg, 3, 32, 32, 5);
  EXPECT_LT(count_parameters(*thin), count_parameters(*net));
  EXPECT_EQ(thin->forward(torch::randn({2, 3, 32, 32})).size(1), 5);
  const torch::Tensor gamma = thin->named_parameters()["layer1.0.bn2.weight"];
  EXPECT_EQ(gamma.abs().sum().item<float>(), 0.0f);
}

TEST(ModelRegistry, UnknownArchListsValidNames) {
  config::ModelConfig cfg;
  cfg.arch = "resnt50";
  try {
    make_image_classifier(cfg, 1, 28, 28, 10);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    std::string valid;
    for (const auto& m : list_models()) valid += (valid.empty() ? "" : ", ") + m.name;
    EXPECT_EQ(std::string(e.what()),
              "model.arch = \"resnt50\": unknown architecture; valid: " + valid);
  }
  EXPECT_THROW(estimate_cost(cfg, 1, 28, 28, 10), InputError);
}

TEST(ModelRegistry, NumClassesMustMatchTheDataset) {
  config::ModelConfig cfg;
  cfg.num_classes = 100;
  try {
    make_image_classifier(cfg, 1, 28, 28, 10);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("model.num_classes = 100: the dataset has 10 classes"),
              std::string::npos)
        << e.what();
  }
  cfg.num_classes = 10;
  EXPECT_NO_THROW(make_image_classifier(cfg, 1, 28, 28, 10));
}

TEST(ModelRegistry, CountParametersSumsEveryParameter) {
  torch::nn::Linear linear(4, 3);  // 12 weights + 3 biases
  EXPECT_EQ(count_parameters(*linear), 15);
  torch::nn::BatchNorm2d bn(5);  // running statistics are buffers, not parameters
  EXPECT_EQ(count_parameters(*bn), 10);
}

TEST(ModelRegistry, CostConvention) {
  config::ModelConfig cfg;
  const ModelCost cost = estimate_cost(cfg, 1, 28, 28, 10);
  EXPECT_EQ(cost.forward_macs, SmallResNet::forward_macs(SmallResNetOptions{}, 28, 28));
  EXPECT_EQ(cost.forward_flops, 2 * cost.forward_macs);
  EXPECT_EQ(cost.training_flops, 6 * cost.forward_macs);
  EXPECT_EQ(training_flops_per_sample(cfg, 1, 28, 28, 10), cost.training_flops);
  EXPECT_EQ(cost.forward_macs, 12958592);  // 77.75 MFLOP per training sample
}

}  // namespace
}  // namespace batchlab::models
