// models/resnet.h against torchvision itself: tests/models/torchvision_reference.py (run by
// test_paths::peer_python(), the virtualenv's Python with torchvision) builds resnet18 and
// resnet50, and batchlab must load their state_dicts by name and reproduce eval-mode logits,
// train-mode logits, the running statistics that train-mode pass leaves, and every parameter
// gradient of a fixed loss. The other direction too: a batchlab state_dict loads into torchvision
// (strict) and gives the same logits.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "models/resnet.h"
#include "models/state_dict.h"
#include "tests/test_paths.h"

namespace batchlab::models {
namespace {

namespace fs = std::filesystem;

constexpr double kTorchvisionTolerance = 1e-4;  // relative error, max-norm

const std::string kScript =
    std::string(test_paths::source_dir()) + "/tests/models/torchvision_reference.py";

struct CommandResult {
  int exit_code = -1;
  std::string output;
};

// Runs `PEER_PYTHON torchvision_reference.py ARGS` (test_paths::peer_python()), capturing stdout
// and stderr.
CommandResult run_reference(const std::string& args, const fs::path& log) {
  const std::string command = "'" + std::string(test_paths::peer_python()) + "' '" + kScript +
                              "' " + args + " > '" + log.string() + "' 2>&1";
  const int status = std::system(command.c_str());
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  result.output = text.str();
  return result;
}

std::string setup_hint(const CommandResult& r) {
  std::string hint =
      "torchvision_reference.py exited with " + std::to_string(r.exit_code) + ":\n" + r.output;
  if (r.exit_code == 3) {
    hint += "\n" + std::string(test_paths::peer_python()) +
            " cannot import torch/torchvision: run bash scripts/setup.sh (it installs the pinned "
            "wheels into .venv/)";
  }
  return hint;
}

std::map<std::string, torch::Tensor> read_map(const fs::path& path) {
  std::map<std::string, torch::Tensor> out;
  for (auto& [name, tensor] : read_state_dict(path.string())) out.emplace(name, tensor);
  return out;
}

double relative_error(const torch::Tensor& actual, const torch::Tensor& expected) {
  const double scale = std::max(expected.abs().max().item<double>(), 1e-30);
  return (actual.to(torch::kDouble) - expected.to(torch::kDouble)).abs().max().item<double>() /
         scale;
}

class TorchvisionEquivalence : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    previous_threads_ = torch::get_num_threads();
    torch::set_num_threads(1);  // same reduction order as the reference (it runs on one thread)
    dir_ = fs::temp_directory_path() / ("batchlab_torchvision_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    reference_ = run_reference("'" + dir_.string() + "'", dir_ / "reference.log");
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
    torch::set_num_threads(previous_threads_);
  }

  void SetUp() override { ASSERT_EQ(reference_.exit_code, 0) << setup_hint(reference_); }

  // Loads <arch>_state.pt into a batchlab ResNet and checks the four kinds of reference output.
  void check_architecture(int64_t depth) {
    const std::string arch = "resnet" + std::to_string(depth);
    ResNetOptions options;
    options.depth = depth;
    options.stem = ResNetStem::kImageNet;  // torchvision's, whatever the input size
    ResNet net(options);
    load_state_dict(net, (dir_ / (arch + "_state.pt")).string());

    auto io = read_map(dir_ / (arch + "_io.pt"));
    const torch::Tensor x = io.at("input");

    net.eval();
    torch::Tensor eval_logits;
    {
      torch::NoGradGuard no_grad;
      eval_logits = net.forward(x);
    }
    const double eval_error = relative_error(eval_logits, io.at("eval_logits"));
    EXPECT_LT(eval_error, kTorchvisionTolerance) << arch << " eval-mode logits";

    net.train();
    const torch::Tensor train_logits = net.forward(x);
    const double train_error = relative_error(train_logits, io.at("train_logits"));
    EXPECT_LT(train_error, kTorchvisionTolerance) << arch << " train-mode logits";
    const torch::Tensor loss = torch::nn::functional::cross_entropy(train_logits, io.at("labels"));
    EXPECT_LT(relative_error(loss, io.at("loss")), kTorchvisionTolerance);
    loss.backward();

    double buffer_error = 0.0;
    const auto buffers = read_map(dir_ / (arch + "_buffers.pt"));
    const auto our_buffers = net.named_buffers();
    ASSERT_EQ(buffers.size(), our_buffers.size());
    for (const auto& [name, expected] : buffers) {
      const torch::Tensor* ours = our_buffers.find(name);
      ASSERT_NE(ours, nullptr) << name;
      if (expected.is_floating_point()) {
        const double e = relative_error(*ours, expected);
        buffer_error = std::max(buffer_error, e);
        EXPECT_LT(e, kTorchvisionTolerance) << arch << " buffer " << name;
      } else {
        EXPECT_TRUE(torch::equal(*ours, expected)) << arch << " buffer " << name;
      }
    }

    double grad_error = 0.0;
    std::string worst_grad;
    const auto grads = read_map(dir_ / (arch + "_grads.pt"));
    const auto params = net.named_parameters();
    ASSERT_EQ(grads.size(), params.size());
    for (const auto& [name, expected] : grads) {
      const torch::Tensor* param = params.find(name);
      ASSERT_NE(param, nullptr) << name;
      ASSERT_TRUE(param->grad().defined()) << name;
      const double e = relative_error(param->grad(), expected);
      if (e > grad_error) {
        grad_error = e;
        worst_grad = name;
      }
      EXPECT_LT(e, kTorchvisionTolerance) << arch << " gradient of " << name;
    }
    std::cout << arch << " vs torchvision, max relative error: eval logits " << eval_error
              << ", train logits " << train_error << ", running stats " << buffer_error
              << ", gradients " << grad_error << " (of " << grads.size() << " parameters"
              << (worst_grad.empty() ? std::string(", all identical") : ", worst " + worst_grad)
              << ")\n";
    RecordProperty(arch + "_max_grad_error", std::to_string(grad_error));
  }

  static inline fs::path dir_;
  static inline CommandResult reference_;
  static inline int previous_threads_ = 1;
};

TEST_F(TorchvisionEquivalence, ResNet18LoadsAndReproducesTorchvision) { check_architecture(18); }

TEST_F(TorchvisionEquivalence, ResNet50LoadsAndReproducesTorchvision) { check_architecture(50); }

TEST_F(TorchvisionEquivalence, StateDictFromBatchlabLoadsIntoTorchvision) {
  torch::manual_seed(3);
  ResNetOptions options;
  options.depth = 18;
  ResNet net(options);
  // Non-trivial running statistics, so the exported buffers matter for the eval-mode check.
  net.train();
  {
    torch::NoGradGuard no_grad;
    net.forward(torch::randn({4, 3, 64, 64}));
  }
  net.eval();
  const torch::Tensor x = torch::randn({2, 3, 64, 64});
  torch::Tensor logits;
  {
    torch::NoGradGuard no_grad;
    logits = net.forward(x);
  }
  const fs::path state = dir_ / "exported_resnet18.pt";
  const fs::path io = dir_ / "exported_io.pt";
  save_state_dict(net, state.string());
  write_state_dict({{"input", x}, {"logits", logits}}, io.string());

  const CommandResult check =
      run_reference("--check-export resnet18 '" + state.string() + "' '" + io.string() + "'",
                    dir_ / "check_export.log");
  EXPECT_EQ(check.exit_code, 0) << setup_hint(check);
  EXPECT_NE(check.output.find("OK resnet18"), std::string::npos) << check.output;
}

}  // namespace
}  // namespace batchlab::models
