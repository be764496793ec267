// Muon with its AdamW groups (core/optim/muon.h): shapes it refuses, the rate factors, the
// multi-tensor path against the per-tensor one (same bits), and a state round trip.
#include "core/optim/muon.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <sstream>
#include <vector>

#include "core/errors.h"

namespace batchlab::optim {
namespace {

TEST(Muon, RefusesANonMatrixInAnOrthogonalizedGroup) {
  std::vector<torch::Tensor> p = {torch::randn({4, 3}).set_requires_grad(true),
                                  torch::randn({4}).set_requires_grad(true)};
  try {
    Muon opt(p, MuonOptions(0.02));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("orthogonalize = false"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(Muon(p, MuonOptions(0.02).orthogonalize(false)));
}

TEST(Muon, RateFactorsAreTorchs) {
  EXPECT_DOUBLE_EQ(detail::muon_lr_factor("original", 12, 4), std::sqrt(3.0));
  EXPECT_DOUBLE_EQ(detail::muon_lr_factor("original", 4, 12), 1.0);
  EXPECT_DOUBLE_EQ(detail::muon_lr_factor("match_rms_adamw", 4, 12), 0.2 * std::sqrt(12.0));
  EXPECT_DOUBLE_EQ(detail::muon_lr_factor("spectral_unclamped", 4, 16), 0.5);
  EXPECT_THROW(detail::muon_lr_factor("rms", 4, 4), Error);
}

struct MuonNet {
  std::vector<torch::Tensor> matrices;
  std::vector<torch::Tensor> others;
};

MuonNet muon_net() {
  torch::manual_seed(9);
  MuonNet n;
  for (auto shape : {std::vector<int64_t>{16, 8}, {8, 16}, {16, 8}, {5, 5}}) {
    n.matrices.push_back(torch::randn(shape).mul_(0.3).set_requires_grad(true));
  }
  for (auto shape : {std::vector<int64_t>{16}, {4, 3, 3, 3}, {10, 8}}) {
    n.others.push_back(torch::randn(shape).mul_(0.3).set_requires_grad(true));
  }
  return n;
}

std::unique_ptr<Muon> make_muon(const MuonNet& n, bool foreach, const std::string& dtype = "bf16") {
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(n.matrices, std::make_unique<MuonOptions>(
                                      MuonOptions(0.02).ns_dtype(dtype).foreach (foreach)));
  groups.emplace_back(n.others, std::make_unique<MuonOptions>(
                                    MuonOptions(0.002).orthogonalize(false).foreach (foreach)));
  return std::make_unique<Muon>(groups, MuonOptions(0.02));
}

void muon_step(Muon& opt, const MuonNet& n, int s) {
  torch::manual_seed(300 + s);
  for (const auto& t : n.matrices) t.mutable_grad() = torch::randn_like(t);
  for (const auto& t : n.others) t.mutable_grad() = torch::randn_like(t);
  opt.step();
}

TEST(Muon, ForeachEqualsPerTensorBitForBit) {
  for (const char* dtype : {"bf16", "fp32"}) {
    MuonNet a = muon_net();
    MuonNet b = muon_net();
    auto fa = make_muon(a, true, dtype);
    auto fb = make_muon(b, false, dtype);
    for (int s = 0; s < 3; ++s) {
      muon_step(*fa, a, s);
      muon_step(*fb, b, s);
    }
    for (size_t i = 0; i < a.matrices.size(); ++i) {
      EXPECT_TRUE(torch::equal(a.matrices[i], b.matrices[i])) << dtype << " matrix " << i;
    }
    for (size_t i = 0; i < a.others.size(); ++i) {
      EXPECT_TRUE(torch::equal(a.others[i], b.others[i])) << dtype << " other " << i;
    }
  }
}

// Without decay, one step from zero momentum moves a matrix by lr * factor * NS(g): an update
// whose singular values lie near 1 (Newton-Schulz's band), whatever the gradient's scale.
TEST(Muon, TheUpdateIsOrthogonalizedWhateverTheGradientScale) {
  for (double scale : {1e-4, 1.0, 1e3}) {
    torch::manual_seed(4);
    torch::Tensor w = torch::zeros({6, 10}).set_requires_grad(true);
    Muon opt({w}, MuonOptions(1.0).weight_decay(0.0).ns_dtype("fp32"));
    w.mutable_grad() = torch::randn({6, 10}) * scale;
    opt.step();
    const torch::Tensor s = torch::linalg_svdvals(w.detach());
    EXPECT_GT(s.min().item<double>(), 0.5) << scale;
    EXPECT_LT(s.max().item<double>(), 1.3) << scale;
  }
}

TEST(Muon, StateRoundTripContinuesTheSameTrajectory) {
  MuonNet a = muon_net();
  MuonNet b = muon_net();
  auto fa = make_muon(a, true);
  auto fb = make_muon(b, true);
  muon_step(*fa, a, 0);
  muon_step(*fa, a, 1);
  std::stringstream buffer;
  {
    torch::serialize::OutputArchive out;
    fa->save(out);
    out.save_to(buffer);
  }
  for (size_t i = 0; i < a.matrices.size(); ++i) b.matrices[i].detach().copy_(a.matrices[i]);
  for (size_t i = 0; i < a.others.size(); ++i) b.others[i].detach().copy_(a.others[i]);
  {
    torch::serialize::InputArchive in;
    in.load_from(buffer);
    fb->load(in);
  }
  EXPECT_EQ(static_cast<const MuonOptions&>(fb->param_groups()[0].options()).ns_dtype(), "bf16");
  EXPECT_FALSE(static_cast<const MuonOptions&>(fb->param_groups()[1].options()).orthogonalize());
  muon_step(*fa, a, 2);
  muon_step(*fb, b, 2);
  for (size_t i = 0; i < a.matrices.size(); ++i) {
    EXPECT_TRUE(torch::equal(a.matrices[i], b.matrices[i])) << i;
  }
  for (size_t i = 0; i < a.others.size(); ++i) EXPECT_TRUE(torch::equal(a.others[i], b.others[i]));
}

TEST(Muon, RejectsBadOptions) {
  std::vector<torch::Tensor> p = {torch::randn({3, 3}).set_requires_grad(true)};
  EXPECT_THROW(Muon(p, MuonOptions(0.02).ns_dtype("fp16")), Error);
  EXPECT_THROW(Muon(p, MuonOptions(0.02).ns_steps(100)), Error);
  EXPECT_THROW(Muon(p, MuonOptions(0.02).adjust_lr("rms")), Error);
  EXPECT_THROW(Muon(p, MuonOptions(0.02).momentum(1.0)), Error);
}

}  // namespace
}  // namespace batchlab::optim
