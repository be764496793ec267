// Reproduces the float64 trajectories of timm's Lars and Lamb (timm/optim/lars.py, lamb.py at
// commit 9d8ccd2b) vendored in tests/data/golden/optim: every parameter after every step, relative
// error below 1e-9, through all three implementations (the fused CPU loops, the multi-tensor
// `_foreach_*` path a GPU takes, and the per-tensor ATen-op path), with one and two threads.
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/optim/lamb.h"
#include "core/optim/lars.h"
#include "tests/test_paths.h"

namespace batchlab::optim {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

fs::path golden_dir() { return fs::path(test_paths::golden_dir()) / "optim"; }

std::vector<std::string> golden_files() {
  std::vector<std::string> out;
  if (!fs::exists(golden_dir())) return out;
  for (const auto& e : fs::directory_iterator(golden_dir())) {
    if (e.path().extension() == ".json") out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

torch::Tensor tensor_of(const json& values, const std::vector<int64_t>& shape) {
  std::vector<double> flat = values.get<std::vector<double>>();
  return torch::tensor(flat, torch::kFloat64).reshape(shape);
}

// Largest relative error over the elements, each measured against max(|expected|, 1e-3 * the
// tensor's largest |expected|): a parameter entry that happens to pass close to zero (fc.bias
// starts at zero) is compared on the scale of its tensor instead of its own vanishing magnitude.
double max_rel_error(const torch::Tensor& got, const torch::Tensor& want) {
  const double scale = want.abs().max().item<double>();
  const torch::Tensor denom = want.abs().clamp_min(std::max(1e-3 * scale, 1e-300));
  return ((got - want).abs() / denom).max().item<double>();
}

enum class Path { fused, foreach, per_tensor };

struct Case {
  std::string file;
  Path path;
  int threads;
  bool fused() const { return path == Path::fused; }
  bool foreach () const { return path != Path::per_tensor; }
};

std::string case_name(const testing::TestParamInfo<Case>& info) {
  std::string stem = fs::path(info.param.file).stem().string();
  const char* path = info.param.path == Path::fused     ? "_fused"
                     : info.param.path == Path::foreach ? "_foreach"
                                                        : "_per_tensor";
  return stem + path + "_t" + std::to_string(info.param.threads);
}

class GoldenTrajectory : public testing::TestWithParam<Case> {
 protected:
  void SetUp() override { saved_threads_ = at::get_num_threads(); }
  void TearDown() override { at::set_num_threads(saved_threads_); }
  int saved_threads_ = 1;
};

TEST_P(GoldenTrajectory, MatchesTimmInFloat64) {
  const Case& c = GetParam();
  at::set_num_threads(c.threads);
  std::ifstream in(golden_dir() / c.file);
  ASSERT_TRUE(in) << c.file;
  const json doc = json::parse(in);
  const std::string kind = doc.at("optimizer").get<std::string>();
  const json& opt = doc.at("options");
  // A file without steps would compare nothing and pass: the trajectory must be there.
  const json& steps = doc.at("steps");
  ASSERT_TRUE(steps.is_array()) << c.file << ": steps is not an array";
  ASSERT_FALSE(steps.empty()) << c.file << ": no steps, nothing to compare";

  std::vector<torch::Tensor> params;
  std::vector<std::string> names;
  for (const json& p : doc.at("params")) {
    params.push_back(
        tensor_of(p.at("init"), p.at("shape").get<std::vector<int64_t>>()).set_requires_grad(true));
    names.push_back(p.at("name").get<std::string>());
  }

  // timm adapts a group iff weight_decay != 0 or always_adapt; here that is the group's `adapt`.
  std::vector<torch::optim::OptimizerParamGroup> groups;
  for (const json& g : doc.at("groups")) {
    std::vector<torch::Tensor> members;
    for (int idx : g.at("params")) members.push_back(params[idx]);
    const double wd = g.at("weight_decay").get<double>();
    if (kind == "lars") {
      ASSERT_EQ(opt.at("dampening").get<double>(), 0.0) << "dampening is not supported";
      groups.emplace_back(members, std::make_unique<LarsOptions>(
                                       LarsOptions(0.0)
                                           .momentum(opt.at("momentum").get<double>())
                                           .weight_decay(wd)
                                           .nesterov(opt.at("nesterov").get<bool>())
                                           .trust_coefficient(opt.at("trust_coeff").get<double>())
                                           .eps(opt.at("eps").get<double>())
                                           .trust_clip(opt.at("trust_clip").get<bool>())
                                           .always_adapt(opt.at("always_adapt").get<bool>())
                                           .adapt(wd != 0.0)
                                           .lr_in_momentum(false)
                                           .fused(c.fused())
                                           .foreach (c.foreach ())));
    } else {
      const auto betas = opt.at("betas").get<std::vector<double>>();
      const double max_norm =
          opt.at("max_grad_norm").is_null() ? 0.0 : opt.at("max_grad_norm").get<double>();
      groups.emplace_back(members, std::make_unique<LambOptions>(
                                       LambOptions(0.0)
                                           .betas(std::make_tuple(betas[0], betas[1]))
                                           .eps(opt.at("eps").get<double>())
                                           .weight_decay(wd)
                                           .bias_correction(opt.at("bias_correction").get<bool>())
                                           .grad_averaging(opt.at("grad_averaging").get<bool>())
                                           .max_grad_norm(max_norm)
                                           .trust_clip(opt.at("trust_clip").get<bool>())
                                           .always_adapt(opt.at("always_adapt").get<bool>())
                                           .adapt(wd != 0.0)
                                           .fused(c.fused())
                                           .foreach (c.foreach ())));
    }
  }
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  if (kind == "lars") {
    optimizer =
        std::make_unique<Lars>(groups, static_cast<const LarsOptions&>(groups[0].options()));
  } else {
    ASSERT_EQ(kind, "lamb");
    optimizer =
        std::make_unique<Lamb>(groups, static_cast<const LambOptions&>(groups[0].options()));
  }

  int step = 0;
  for (const json& s : steps) {
    const double lr = s.at("lr").get<double>();
    for (auto& g : optimizer->param_groups()) g.options().set_lr(lr);
    for (size_t i = 0; i < params.size(); ++i) {
      params[i].mutable_grad() = tensor_of(s.at("grads")[i], params[i].sizes().vec());
    }
    optimizer->step();
    for (size_t i = 0; i < params.size(); ++i) {
      const torch::Tensor want = tensor_of(s.at("expected")[i], params[i].sizes().vec());
      EXPECT_LT(max_rel_error(params[i], want), 1e-9)
          << c.file << " step " << step << " param " << names[i] << " lr " << lr;
    }
    ++step;
  }
}

std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (const std::string& f : golden_files()) {
    for (Path path : {Path::fused, Path::foreach, Path::per_tensor}) {
      for (int threads : {1, 2}) out.push_back({f, path, threads});
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Timm, GoldenTrajectory, testing::ValuesIn(all_cases()), case_name);

TEST(GoldenData, AllSixFilesArePresent) {
  const std::vector<std::string> files = golden_files();
  EXPECT_EQ(files.size(), 6u) << golden_dir();
}

}  // namespace
}  // namespace batchlab::optim
