// Schedule-Free AdamW (core/optim/schedule_free_adamw.h): the swap to the evaluation weights and
// back, a trajectory that does not depend on how often it is evaluated, an exact resume from a
// checkpoint written with the evaluation weights in place, and the two paths bit for bit.
#include "core/optim/schedule_free_adamw.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <sstream>
#include <vector>

#include "core/errors.h"
#include "tests/op_counter.h"

namespace batchlab::optim {
namespace {

std::vector<torch::Tensor> sf_params(int count) {
  torch::manual_seed(5);
  std::vector<torch::Tensor> out;
  for (int i = 0; i < count; ++i) {
    out.push_back(torch::randn({4 + i % 3, 3}).set_requires_grad(true));
  }
  return out;
}

std::unique_ptr<ScheduleFreeAdamW> make_sf(const std::vector<torch::Tensor>& p,
                                           bool foreach = true) {
  std::vector<torch::optim::OptimizerParamGroup> groups;
  const size_t half = p.size() / 2;
  groups.emplace_back(std::vector<torch::Tensor>(p.begin(), p.begin() + half),
                      std::make_unique<ScheduleFreeAdamWOptions>(
                          ScheduleFreeAdamWOptions(0.01).weight_decay(0.1).foreach (foreach)));
  groups.emplace_back(
      std::vector<torch::Tensor>(p.begin() + half, p.end()),
      std::make_unique<ScheduleFreeAdamWOptions>(ScheduleFreeAdamWOptions(0.01).foreach (foreach)));
  return std::make_unique<ScheduleFreeAdamW>(groups, ScheduleFreeAdamWOptions(0.01));
}

// The step's rate: a warmup then constant, as batchlab's schedule sets it.
void sf_step_at(ScheduleFreeAdamW& opt, const std::vector<torch::Tensor>& p, int step) {
  for (auto& g : opt.param_groups()) g.options().set_lr(0.01 * std::min(1.0, (step + 1) / 3.0));
  torch::manual_seed(200 + step);
  for (const auto& t : p) t.mutable_grad() = torch::randn_like(t);
  opt.step();
}

std::vector<torch::Tensor> sf_copies(const std::vector<torch::Tensor>& p) {
  std::vector<torch::Tensor> out;
  for (const auto& t : p) out.push_back(t.detach().clone());
  return out;
}

TEST(ScheduleFreeAdamW, EvalWeightsAreTheAverageAndTheSwapBackIsExact) {
  auto p = sf_params(4);
  auto opt = make_sf(p);
  for (int s = 0; s < 3; ++s) sf_step_at(*opt, p, s);
  const auto y = sf_copies(p);
  EXPECT_FALSE(opt->holds_eval_weights());
  opt->eval_weights();
  EXPECT_TRUE(opt->holds_eval_weights());
  for (size_t i = 0; i < p.size(); ++i) {
    const torch::Tensor& z = opt->param_state(p[i])->z();
    // x = y + (1 - 1/b1) (z - y), b1 = 0.9
    const torch::Tensor x = y[i] + (1.0 - 1.0 / 0.9) * (z - y[i]);
    EXPECT_TRUE(torch::allclose(p[i], x, 1e-6, 1e-7)) << i;
    EXPECT_FALSE(torch::equal(p[i], y[i])) << i;
  }
  opt->eval_weights();  // a second call changes nothing
  opt->train_weights();
  for (size_t i = 0; i < p.size(); ++i) EXPECT_TRUE(torch::equal(p[i], y[i])) << i;
}

TEST(ScheduleFreeAdamW, StepWithTheEvaluationWeightsInPlaceIsAnError) {
  auto p = sf_params(2);
  auto opt = make_sf(p);
  sf_step_at(*opt, p, 0);
  opt->eval_weights();
  try {
    sf_step_at(*opt, p, 1);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("train_weights()"), std::string::npos) << e.what();
  }
}

TEST(ScheduleFreeAdamW, EvaluatingDoesNotChangeTheTrajectory) {
  auto a = sf_params(4);
  auto b = sf_params(4);
  auto fa = make_sf(a);
  auto fb = make_sf(b);
  for (int s = 0; s < 6; ++s) {
    sf_step_at(*fa, a, s);
    sf_step_at(*fb, b, s);
    fb->eval_weights();  // b is evaluated after every step
    fb->train_weights();
  }
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << i;
}

// As the trainer does: a checkpoint taken with the evaluation weights in place (parameters = x,
// optimizer state holding z, v and the kept y), loaded into a fresh run, then train_weights().
TEST(ScheduleFreeAdamW, ResumeFromACheckpointWithEvalWeightsIsExact) {
  auto a = sf_params(4);
  auto fa = make_sf(a);
  for (int s = 0; s < 3; ++s) sf_step_at(*fa, a, s);
  fa->eval_weights();
  const auto saved_x = sf_copies(a);
  std::stringstream buffer;
  {
    torch::serialize::OutputArchive out;
    fa->save(out);
    out.save_to(buffer);
  }
  fa->train_weights();

  auto b = sf_params(4);
  auto fb = make_sf(b);
  for (size_t i = 0; i < b.size(); ++i) b[i].detach().copy_(saved_x[i]);
  {
    torch::serialize::InputArchive in;
    in.load_from(buffer);
    fb->load(in);
  }
  EXPECT_TRUE(fb->holds_eval_weights());
  fb->train_weights();
  for (int s = 3; s < 6; ++s) {
    sf_step_at(*fa, a, s);
    sf_step_at(*fb, b, s);
  }
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << i;
}

TEST(ScheduleFreeAdamW, ForeachEqualsPerTensorBitForBit) {
  auto a = sf_params(5);
  auto b = sf_params(5);
  auto fa = make_sf(a, true);
  auto fb = make_sf(b, false);
  for (int s = 0; s < 4; ++s) {
    sf_step_at(*fa, a, s);
    sf_step_at(*fb, b, s);
  }
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << i;
}

TEST(ScheduleFreeAdamW, ForeachOpsDoNotGrowWithTheTensors) {
  auto count = [](int n) {
    auto p = sf_params(n);
    auto opt = make_sf(p);
    sf_step_at(*opt, p, 0);
    for (const auto& t : p) t.mutable_grad() = torch::ones_like(t);
    batchlab::test_util::OpCounter counter;
    opt->step();
    return counter.ops();
  };
  const int64_t few = count(4);
  EXPECT_EQ(few, count(40));
  // Two groups (one bucket each): 9 ops, +1 for the decayed group's weight decay.
  EXPECT_EQ(few, 2 * 9 + 1);
}

TEST(ScheduleFreeAdamW, RejectsBadOptions) {
  auto p = sf_params(1);
  EXPECT_THROW(
      ScheduleFreeAdamW(p, ScheduleFreeAdamWOptions(0.01).betas(std::make_tuple(0.0, 0.9))), Error);
  EXPECT_THROW(ScheduleFreeAdamW(p, ScheduleFreeAdamWOptions(0.01).weight_lr_power(-1.0)), Error);
}

}  // namespace
}  // namespace batchlab::optim
