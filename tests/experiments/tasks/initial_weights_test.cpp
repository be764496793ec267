// model.init_from through the task factory: the network the task trains starts from the file,
// strictly (every tensor, or exit 2 listing them) or not (a new head keeps its initialization).
#include "experiments/tasks/initial_weights.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <filesystem>

#include "core/errors.h"
#include "experiments/tasks/task_factory.h"
#include "models/small_resnet.h"
#include "models/state_dict.h"

namespace batchlab::experiments {
namespace {

namespace fs = std::filesystem;

struct Files {
  fs::path dir =
      fs::temp_directory_path() / ("batchlab-initial-weights-" + std::to_string(::getpid()) + "-" +
                                   std::to_string(std::rand()));
  Files() { fs::create_directories(dir); }
  ~Files() { fs::remove_all(dir); }
  std::string path(const std::string& name) const { return (dir / name).string(); }
};

// A small_resnet of width 4 for 1x28x28 inputs and `classes` outputs, saved as a state_dict.
models::SmallResNet saved_small_resnet(const std::string& path, int64_t classes, uint64_t seed) {
  torch::manual_seed(seed);
  models::SmallResNetOptions o;
  o.width = 4;
  o.num_classes = classes;
  models::SmallResNet net(o);
  models::save_state_dict(net, path);
  return net;
}

config::ModelConfig model_from(const std::string& path, bool strict) {
  config::ModelConfig m;
  m.arch = "small_resnet";
  m.width = 4;
  m.init_from = path;
  m.init_strict = strict;
  m.init_sha256 = "0123456789abcdef0123";
  return m;
}

config::DataConfig synthetic() {
  config::DataConfig d;
  d.dataset = "synthetic";
  d.train_size = 64;
  d.test_size = 16;
  return d;
}

TEST(InitialWeights, TheTaskStartsFromEveryTensorOfTheFile) {
  Files files;
  const auto source = saved_small_resnet(files.path("w.pt"), 10, 3);
  std::vector<std::string> notes;
  torch::manual_seed(99);  // the task's own initialization differs
  auto task = make_task(model_from(files.path("w.pt"), true), synthetic(), 0, torch::kCPU, &notes);
  const auto expected = models::state_dict(source);
  const auto actual = models::state_dict(task->model());
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_TRUE(torch::equal(actual[i].second, expected[i].second)) << expected[i].first;
  }
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("all " + std::to_string(expected.size()) +
                          " parameters and buffers loaded (SHA-256 0123456789abcdef)"),
            std::string::npos)
      << notes[0];
}

TEST(InitialWeights, StrictRefusesAnotherHeadNamingTheFileTheTensorAndTheWayOut) {
  Files files;
  saved_small_resnet(files.path("five.pt"), 5, 3);
  try {
    make_task(model_from(files.path("five.pt"), true), synthetic(), 0, torch::kCPU);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("model.init_from = " + files.path("five.pt")), std::string::npos) << m;
    EXPECT_NE(m.find("fc.weight (file [5, 8], model [10, 8])"), std::string::npos) << m;
    EXPECT_NE(m.find("set model.init_strict = false"), std::string::npos) << m;
  }
}

TEST(InitialWeights, NotStrictKeepsTheNewHeadAndSaysSo) {
  Files files;
  const auto source = saved_small_resnet(files.path("five.pt"), 5, 3);
  torch::manual_seed(99);
  models::SmallResNetOptions o;
  o.width = 4;
  const models::SmallResNet fresh(o);  // what seed 99 initializes the task's network to
  std::vector<std::string> notes;
  torch::manual_seed(99);
  auto task =
      make_task(model_from(files.path("five.pt"), false), synthetic(), 0, torch::kCPU, &notes);
  const auto params = task->model().named_parameters();
  EXPECT_TRUE(torch::equal(params["fc.weight"], fresh.named_parameters()["fc.weight"]));
  EXPECT_TRUE(torch::equal(params["conv1.weight"], source.named_parameters()["conv1.weight"]));
  ASSERT_EQ(notes.size(), 2u);
  const size_t total = models::state_dict(task->model()).size();
  EXPECT_NE(notes[0].find(std::to_string(total - 2) + " of " + std::to_string(total) +
                          " parameters and buffers loaded (model.init_strict = false)"),
            std::string::npos)
      << notes[0];
  EXPECT_NE(notes[1].find("left at their initialization (2): fc.weight (file [5, 8], model "
                          "[10, 8]), fc.bias (file [5], model [10])"),
            std::string::npos)
      << notes[1];
}

TEST(InitialWeights, NothingToLoadWithoutAFile) {
  config::ModelConfig m;
  m.arch = "small_resnet";
  models::SmallResNet net{models::SmallResNetOptions{}};
  EXPECT_TRUE(load_initial_weights(net, m).empty());
}

}  // namespace
}  // namespace batchlab::experiments
