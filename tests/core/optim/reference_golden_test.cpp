// Reproduces the trajectories of Muon (torch.optim.Muon with AdamW for the other parameters),
// Schedule-Free AdamW (the schedulefree package) and Lion (lion-pytorch) written by
// scripts/python/make_golden_optim.py into tests/data/golden/optim_packages: every parameter after
// every step (and Schedule-Free's evaluation weights where the file has them), through both
// implementations (multi-tensor and per-tensor), with one and two threads, within the tolerance
// each file states (float64: 1e-9 relative; Muon: 1e-12 in bf16, bitwise on a CPU whose bf16
// product rounds as the writing machine's, which each bf16 file's canary checks, else a skip that
// says to regenerate; 1e-6 with the fp32 iteration).
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/optim/lion.h"
#include "core/optim/muon.h"
#include "core/optim/schedule_free_adamw.h"
#include "tests/test_paths.h"

namespace batchlab::optim {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

fs::path packages_dir() {
  return fs::path(test_paths::source_dir()) / "tests" / "data" / "golden" / "optim_packages";
}

std::vector<std::string> packages_files() {
  std::vector<std::string> out;
  if (!fs::exists(packages_dir())) return out;
  for (const auto& e : fs::directory_iterator(packages_dir())) {
    if (e.path().extension() == ".json") out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

json load_packages_file(const std::string& file) {
  std::ifstream in(packages_dir() / file);
  if (!in) throw std::runtime_error("cannot read " + (packages_dir() / file).string());
  return json::parse(in);
}

torch::Tensor packages_tensor(const json& values, const std::vector<int64_t>& shape) {
  return torch::tensor(values.get<std::vector<double>>(), torch::kFloat64).reshape(shape);
}

// Largest relative error over the elements, each against max(|expected|, 1e-3 x the tensor's
// largest |expected|) (golden_test.cpp: an entry passing near zero is judged on its tensor's
// scale).
double packages_rel_error(const torch::Tensor& got, const torch::Tensor& want) {
  const double scale = want.abs().max().item<double>();
  const torch::Tensor denom = want.abs().clamp_min(std::max(1e-3 * scale, 1e-300));
  return ((got - want).abs() / denom).max().item<double>();
}

struct PackagesBuilt {
  std::vector<torch::Tensor> params;
  std::vector<std::string> names;
  std::vector<double> lr_scale;  // per optimizer group
  std::unique_ptr<torch::optim::Optimizer> optimizer;
};

std::pair<double, double> packages_betas(const json& opt) {
  const auto b = opt.at("betas").get<std::vector<double>>();
  return {b.at(0), b.at(1)};
}

// The optimizer a file describes, over fresh parameters at the file's initial values.
// `ns_dtype` overrides Muon's Newton-Schulz dtype when not empty.
PackagesBuilt build_packages(const json& doc, bool foreach, const std::string& ns_dtype = "") {
  PackagesBuilt b;
  for (const json& p : doc.at("params")) {
    b.params.push_back(packages_tensor(p.at("init"), p.at("shape").get<std::vector<int64_t>>())
                           .set_requires_grad(true));
    b.names.push_back(p.at("name").get<std::string>());
  }
  const std::string kind = doc.at("optimizer").get<std::string>();
  const json& opt = doc.at("options");
  std::vector<torch::optim::OptimizerParamGroup> groups;
  for (const json& g : doc.at("groups")) {
    std::vector<torch::Tensor> members;
    for (int idx : g.at("params")) members.push_back(b.params[idx]);
    const double wd = g.at("weight_decay").get<double>();
    b.lr_scale.push_back(g.at("lr_scale").get<double>());
    std::unique_ptr<torch::optim::OptimizerOptions> o;
    if (kind == "muon") {
      const auto c = opt.at("ns_coefficients").get<std::vector<double>>();
      const auto [b1, b2] = packages_betas(opt);
      o = std::make_unique<MuonOptions>(
          MuonOptions(0.0)
              .weight_decay(wd)
              .orthogonalize(g.at("kind").get<std::string>() == "muon")
              .momentum(opt.at("momentum").get<double>())
              .nesterov(opt.at("nesterov").get<bool>())
              .ns_coefficients(std::make_tuple(c.at(0), c.at(1), c.at(2)))
              .ns_steps(opt.at("ns_steps").get<int64_t>())
              .ns_eps(opt.at("ns_eps").get<double>())
              .ns_dtype(ns_dtype.empty() ? opt.at("ns_dtype").get<std::string>() : ns_dtype)
              .adjust_lr(opt.at("adjust_lr").get<std::string>())
              .betas(std::make_tuple(b1, b2))
              .eps(opt.at("eps").get<double>())
              .foreach (foreach));
    } else if (kind == "schedulefree_adamw") {
      if (opt.at("warmup_steps").get<int64_t>() != 0) {
        throw std::runtime_error("the package's warmup_steps is given as the fed rates instead");
      }
      const auto [b1, b2] = packages_betas(opt);
      o = std::make_unique<ScheduleFreeAdamWOptions>(
          ScheduleFreeAdamWOptions(0.0)
              .betas(std::make_tuple(b1, b2))
              .eps(opt.at("eps").get<double>())
              .weight_decay(wd)
              .r(opt.at("r").get<double>())
              .weight_lr_power(opt.at("weight_lr_power").get<double>())
              .foreach (foreach));
    } else if (kind == "lion") {
      const auto [b1, b2] = packages_betas(opt);
      o = std::make_unique<LionOptions>(
          LionOptions(0.0).betas(std::make_tuple(b1, b2)).weight_decay(wd).foreach (foreach));
    } else {
      throw std::runtime_error("unknown optimizer " + kind);
    }
    groups.emplace_back(members, std::move(o));
  }
  if (kind == "muon") {
    b.optimizer =
        std::make_unique<Muon>(groups, static_cast<const MuonOptions&>(groups[0].options()));
  } else if (kind == "schedulefree_adamw") {
    b.optimizer = std::make_unique<ScheduleFreeAdamW>(
        groups, static_cast<const ScheduleFreeAdamWOptions&>(groups[0].options()));
  } else {
    b.optimizer =
        std::make_unique<Lion>(groups, static_cast<const LionOptions&>(groups[0].options()));
  }
  return b;
}

// Steps through the file; returns the largest relative error seen over all parameters and steps
// (and evaluation weights), reporting each step above `tolerance` as a failure.
double packages_replay(const json& doc, PackagesBuilt& b, double tolerance,
                       const std::string& what) {
  double worst = 0.0;
  int step = 0;
  auto check = [&](const json& expected, const char* which) {
    for (size_t i = 0; i < b.params.size(); ++i) {
      const double err =
          packages_rel_error(b.params[i], packages_tensor(expected[i], b.params[i].sizes().vec()));
      worst = std::max(worst, err);
      EXPECT_LE(err, tolerance) << what << " step " << step << " " << which << " " << b.names[i];
    }
  };
  for (const json& s : doc.at("steps")) {
    const double lr = s.at("lr").get<double>();
    auto& groups = b.optimizer->param_groups();
    for (size_t g = 0; g < groups.size(); ++g) groups[g].options().set_lr(lr * b.lr_scale[g]);
    for (size_t i = 0; i < b.params.size(); ++i) {
      b.params[i].mutable_grad() = packages_tensor(s.at("grads")[i], b.params[i].sizes().vec());
    }
    b.optimizer->step();
    check(s.at("expected"), "parameters");
    if (s.contains("eval_expected")) {
      auto& sf = dynamic_cast<ScheduleFreeAdamW&>(*b.optimizer);
      sf.eval_weights();
      check(s.at("eval_expected"), "evaluation weights");
      sf.train_weights();
    }
    ++step;
  }
  return worst;
}

// Whether LibTorch's bf16 product here gives the bits the writing machine's torch gave: the one
// thing outside batchlab's code that the bf16 files' bitwise bound depends on.
bool same_bf16_gemm(const json& canary) {
  const torch::Tensor a =
      packages_tensor(canary.at("a"), canary.at("a_shape").get<std::vector<int64_t>>())
          .to(torch::kBFloat16);
  const torch::Tensor product = a.matmul(a.t()).to(torch::kFloat64);
  return torch::equal(product, packages_tensor(canary.at("product"), product.sizes().vec()));
}

struct PackagesCase {
  std::string file;
  bool foreach = true;
  int threads = 1;
};

std::string packages_case_name(const testing::TestParamInfo<PackagesCase>& info) {
  return fs::path(info.param.file).stem().string() +
         (info.param.foreach ? "_foreach" : "_per_tensor") + "_t" +
         std::to_string(info.param.threads);
}

class ReferenceTrajectory : public testing::TestWithParam<PackagesCase> {
 protected:
  void SetUp() override { saved_threads_ = at::get_num_threads(); }
  void TearDown() override { at::set_num_threads(saved_threads_); }
  int saved_threads_ = 1;
};

TEST_P(ReferenceTrajectory, MatchesItsPackage) {
  const PackagesCase& c = GetParam();
  at::set_num_threads(c.threads);
  const json doc = load_packages_file(c.file);
  // A file without steps would compare nothing and pass: the trajectory must be there.
  ASSERT_TRUE(doc.at("steps").is_array() && !doc.at("steps").empty()) << c.file;
  const double tolerance = doc.at("tolerance").get<double>();
  ASSERT_GT(tolerance, 0.0) << c.file;
  if (doc.contains("bf16_gemm_canary") && !same_bf16_gemm(doc.at("bf16_gemm_canary"))) {
    GTEST_SKIP() << c.file << ": this CPU's bf16 matrix product rounds differently from the "
                 << "machine that wrote the file (its canary product differs), so torch's bf16 "
                 << "Newton-Schulz has other bits here; regenerate the files with "
                 << "scripts/python/make_golden_optim.py";
  }
  PackagesBuilt b = build_packages(doc, c.foreach);
  const double worst = packages_replay(doc, b, tolerance, c.file);
  std::ostringstream text;
  text << std::scientific << std::setprecision(2) << worst;
  RecordProperty("max_rel_error", text.str());
}

std::vector<PackagesCase> packages_cases() {
  std::vector<PackagesCase> out;
  for (const std::string& f : packages_files()) {
    for (bool foreach : {true, false}) {
      for (int threads : {1, 2}) out.push_back({f, foreach, threads});
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Packages, ReferenceTrajectory, testing::ValuesIn(packages_cases()),
                         packages_case_name);

TEST(ReferenceGoldenData, EveryOptimizerHasItsFiles) {
  const std::vector<std::string> files = packages_files();
  for (const char* prefix : {"muon_", "schedulefree_", "lion_"}) {
    EXPECT_GE(std::count_if(files.begin(), files.end(),
                            [&](const std::string& f) { return f.rfind(prefix, 0) == 0; }),
              2)
        << prefix << " in " << packages_dir();
  }
}

// The bf16 files' tolerance has teeth: the same trajectory with Newton-Schulz in float32 (the only
// difference being bf16 rounding inside the iteration) misses it by a wide margin. So a path that
// silently ran the iteration in another precision than torch's would fail the test above.
TEST(ReferenceGoldenData, MuonBf16ToleranceSeparatesBf16FromFp32) {
  const json doc = load_packages_file("muon_default.json");
  ASSERT_EQ(doc.at("options").at("ns_dtype").get<std::string>(), "bf16");
  ASSERT_TRUE(doc.contains("bf16_gemm_canary"));
  const double tolerance = doc.at("tolerance").get<double>();
  PackagesBuilt b = build_packages(doc, /*foreach=*/true, /*ns_dtype=*/"fp32");
  double worst = 0.0;
  {
    // Not through packages_replay(): its failures would be expected ones here.
    for (const json& s : doc.at("steps")) {
      auto& groups = b.optimizer->param_groups();
      for (size_t g = 0; g < groups.size(); ++g) {
        groups[g].options().set_lr(s.at("lr").get<double>() * b.lr_scale[g]);
      }
      for (size_t i = 0; i < b.params.size(); ++i) {
        b.params[i].mutable_grad() = packages_tensor(s.at("grads")[i], b.params[i].sizes().vec());
      }
      b.optimizer->step();
      for (size_t i = 0; i < b.params.size(); ++i) {
        worst = std::max(
            worst, packages_rel_error(b.params[i], packages_tensor(s.at("expected")[i],
                                                                   b.params[i].sizes().vec())));
      }
    }
  }
  EXPECT_GT(worst, 10.0 * tolerance);
}

}  // namespace
}  // namespace batchlab::optim
