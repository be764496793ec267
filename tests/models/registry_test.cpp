#include "models/registry.h"

#include <ATen/record_function.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/config/loader.h"
#include "core/errors.h"
#include "models/resnet.h"
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

// ---- The ResNet family in the table ------------------------------------------------------------

namespace batchlab::models {
namespace {

config::ModelConfig arch(const std::string& name) {
  config::ModelConfig cfg;
  cfg.arch = name;
  return cfg;
}

const ModelInfo& info_of(const std::string& name) {
  static const std::vector<ModelInfo> models = list_models();
  for (const auto& m : models) {
    if (m.name == name) return m;
  }
  throw std::runtime_error("no model " + name);
}

// Multiply-accumulates of every convolution and matrix product that runs while it is alive, from
// the operators' actual operand and output shapes (a RecordFunction observer), so that the
// analytic forward_macs are checked against what the modules really compute. LibTorch's Linear
// calls aten::addmm directly for 2-d inputs; an operator nested in a counted one (aten::linear ->
// aten::addmm, aten::conv2d -> aten::convolution) is not counted again.
class MacCounter {
 public:
  MacCounter() {
    total() = 0;
    depth() = 0;
    handle_ = at::addThreadLocalCallback(
        at::RecordFunctionCallback(&MacCounter::on_start, &MacCounter::on_end)
            .needsInputs(true)
            .needsOutputs(true)
            .scopes({at::RecordScope::FUNCTION}));
  }
  ~MacCounter() { at::removeCallback(handle_); }
  int64_t macs() const { return total(); }

 private:
  struct Operands : at::ObserverContext {
    int64_t macs_per_output = 0;  // 0 for a nested operator
  };
  static int64_t& total() {
    static thread_local int64_t count = 0;
    return count;
  }
  static int& depth() {
    static thread_local int level = 0;
    return level;
  }
  static bool counted(const at::RecordFunction& fn) {
    const std::string name = fn.name();
    return name == "aten::conv2d" || name == "aten::linear" || name == "aten::addmm";
  }
  static std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
    if (!counted(fn)) return nullptr;
    auto ctx = std::make_unique<Operands>();
    if (depth()++ == 0) {
      const std::string name = fn.name();
      if (name == "aten::addmm") {
        // addmm(bias, mat1 [N, K], mat2 [K, M]): K MACs per output value.
        ctx->macs_per_output = fn.inputs()[1].toTensor().size(1);
      } else {
        // conv2d weight [out, in / groups, kh, kw]; linear weight [out, in].
        const torch::Tensor weight = fn.inputs()[1].toTensor();
        ctx->macs_per_output = weight.numel() / weight.size(0);
      }
    }
    return ctx;
  }
  static void on_end(const at::RecordFunction& fn, at::ObserverContext* ctx) {
    if (ctx == nullptr) return;
    --depth();
    total() += fn.outputs()[0].toTensor().numel() * static_cast<Operands*>(ctx)->macs_per_output;
  }
  at::CallbackHandle handle_;
};

TEST(ModelRegistry, ListsTheResNetFamily) {
  for (const std::string name : {"resnet18", "resnet34", "resnet50", "resnet101", "resnet152"}) {
    const ModelInfo& m = info_of(name);
    EXPECT_EQ(m.channels, 3) << name;
    EXPECT_EQ(m.height, 224) << name;
    EXPECT_EQ(m.width, 224) << name;
    EXPECT_EQ(m.num_classes, 1000) << name;
  }
  for (const std::string name : {"resnet20", "resnet32", "resnet56"}) {
    const ModelInfo& m = info_of(name);
    EXPECT_EQ(m.channels, 3) << name;
    EXPECT_EQ(m.height, 32) << name;
    EXPECT_EQ(m.num_classes, 10) << name;
  }
}

TEST(ModelRegistry, ResNetsAreBuiltFromTheConfig) {
  config::ModelConfig cfg = arch("resnet18");
  const auto imagenet = make_image_classifier(cfg, 3, 224, 224, 1000);
  EXPECT_EQ(count_parameters(*imagenet), 11689512);
  EXPECT_NE(dynamic_cast<ResNet*>(imagenet.get()), nullptr);

  // model.stem = "auto" (the default) picks the small stem for 32x32 inputs.
  cfg.zero_init_residual = true;
  const auto cifar = make_image_classifier(cfg, 3, 32, 32, 10, /*bn_group=*/2);
  const auto* resnet = dynamic_cast<ResNet*>(cifar.get());
  ASSERT_NE(resnet, nullptr);
  EXPECT_EQ(resnet->options().stem, ResNetStem::kSmall);
  EXPECT_EQ(resnet->options().bn_group, 2);
  EXPECT_TRUE(resnet->options().zero_init_residual);
  EXPECT_EQ(cifar->named_parameters()["conv1.weight"].sizes(), (std::vector<int64_t>{64, 3, 3, 3}));
  EXPECT_EQ(cifar->named_parameters()["layer3.1.bn2.weight"].abs().sum().item<float>(), 0.0f);

  cfg.stem = "imagenet";
  const auto forced = make_image_classifier(cfg, 3, 32, 32, 10);
  EXPECT_EQ(forced->named_parameters()["conv1.weight"].size(3), 7);

  const auto r20 = make_image_classifier(arch("resnet20"), 3, 32, 32, 10);
  EXPECT_EQ(count_parameters(*r20), 269722);
  EXPECT_EQ(r20->forward(torch::randn({2, 3, 32, 32})).sizes(), (std::vector<int64_t>{2, 10}));
}

TEST(ModelRegistry, ResNetCostsMatchPublishedNumbers) {
  const auto gmacs = [](const std::string& name) {
    const ModelInfo& m = info_of(name);
    return static_cast<double>(
               estimate_cost(arch(name), m.channels, m.height, m.width, m.num_classes)
                   .forward_macs) /
           1e9;
  };
  EXPECT_NEAR(gmacs("resnet50"), 4.09, 0.005);  // torchvision: 4.09 GFLOPS (= GMACs)
  EXPECT_NEAR(gmacs("resnet18"), 1.81, 0.005);
  EXPECT_NEAR(gmacs("resnet152"), 11.51, 0.005);
  EXPECT_NEAR(gmacs("resnet20") * 1e3, 40.55, 0.01);  // MMACs at 32x32
  const ModelCost cost = estimate_cost(arch("resnet50"), 3, 224, 224, 1000);
  EXPECT_EQ(cost.training_flops, 6 * cost.forward_macs);
}

TEST(ModelRegistry, AnalyticMacsEqualACountFromRunningTheModels) {
  torch::NoGradGuard no_grad;
  struct Case {
    std::string arch;
    std::string stem;
    int64_t channels, height, width, classes;
  };
  // Odd sizes exercise the rounding of every stride-2 step; resnet50 at 224 is the headline.
  const std::vector<Case> cases = {
      {"resnet18", "imagenet", 3, 224, 224, 1000}, {"resnet50", "imagenet", 3, 224, 224, 1000},
      {"resnet34", "imagenet", 3, 97, 75, 12},     {"resnet50", "small", 1, 28, 28, 10},
      {"resnet18", "auto", 3, 33, 31, 10},         {"resnet20", "auto", 3, 32, 32, 10},
      {"resnet56", "auto", 1, 29, 28, 10},         {"small_resnet", "auto", 1, 28, 28, 10}};
  for (const Case& c : cases) {
    config::ModelConfig cfg = arch(c.arch);
    cfg.stem = c.stem;
    const auto net = make_image_classifier(cfg, c.channels, c.height, c.width, c.classes);
    net->eval();
    const int64_t batch = 2;
    MacCounter counter;
    net->forward(torch::randn({batch, c.channels, c.height, c.width}));
    EXPECT_EQ(counter.macs() / batch,
              estimate_cost(cfg, c.channels, c.height, c.width, c.classes).forward_macs)
        << c.arch << " " << c.stem << " " << c.height << "x" << c.width;
    EXPECT_GT(counter.macs(), 0);
  }
}

TEST(ModelRegistry, UnknownArchThroughTheConfigLoaderListsEveryName) {
  // What `batchlab train` does: the loader checks model.arch against the table's names.
  config::LoadOptions options;
  for (const auto& m : list_models()) options.model_archs.push_back(m.name);
  const auto toml = [](const std::string& name) {
    return "schema_version = 1\n[model]\narch = \"" + name +
           "\"\n[batch]\nglobal = 256\n[schedule]\nepochs = 10\n";
  };
  try {
    config::parse_experiment(toml("resnt50"), "exp.toml", options);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("exp.toml:3:"), std::string::npos) << message;
    EXPECT_NE(message.find("model.arch = \"resnt50\""), std::string::npos) << message;
    for (const auto& name : options.model_archs) {
      EXPECT_NE(message.find(name), std::string::npos) << name << " missing from: " << message;
    }
    EXPECT_NE(message.find("did you mean resnet50?"), std::string::npos) << message;
  }
  // The same file with a real name passes.
  EXPECT_EQ(config::parse_experiment(toml("resnet50"), "exp.toml", options).model.arch, "resnet50");
}

}  // namespace
}  // namespace batchlab::models
