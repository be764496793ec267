#include "core/optim/schedule_free_adamw.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "core/errors.h"
#include "core/optim/foreach_common.h"
#include "core/optim/group_options.h"
#include "core/optim/state_key.h"

namespace batchlab::optim {

using SfOptions = ScheduleFreeAdamWOptions;
using SfParamState = ScheduleFreeAdamWParamState;

SfOptions::ScheduleFreeAdamWOptions(double lr) : lr_(lr) {}

bool operator==(const SfOptions& a, const SfOptions& b) {
  return a.lr() == b.lr() && a.betas() == b.betas() && a.eps() == b.eps() &&
         a.weight_decay() == b.weight_decay() && a.r() == b.r() &&
         a.weight_lr_power() == b.weight_lr_power() && a.foreach () == b.foreach () &&
         a.k() == b.k() && a.lr_max() == b.lr_max() && a.weight_sum() == b.weight_sum() &&
         a.train_mode() == b.train_mode();
}

void SfOptions::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(lr);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(betas);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(eps);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(weight_decay);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(r);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(weight_lr_power);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(foreach);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(k);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(lr_max);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(weight_sum);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(train_mode);
}

void SfOptions::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, lr);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(betas_t, betas);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, eps);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, weight_decay);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, r);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, weight_lr_power);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, foreach);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(int64_t, k);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, lr_max);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, weight_sum);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, train_mode);
}

bool operator==(const SfParamState& a, const SfParamState& b) {
  auto same = [](const torch::Tensor& x, const torch::Tensor& y) {
    return x.defined() == y.defined() && (!x.defined() || at::equal(x, y));
  };
  return same(a.z(), b.z()) && same(a.exp_avg_sq(), b.exp_avg_sq()) && same(a.y(), b.y());
}

void SfParamState::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(z);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(exp_avg_sq);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(y);
}

void SfParamState::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, z);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, exp_avg_sq);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, y);
}

namespace {

void validate(const SfOptions& o) {
  const auto [b1, b2] = o.betas();
  std::string bad;
  if (!(o.lr() >= 0.0)) bad = fmt::format("lr = {} (must be >= 0)", o.lr());
  // b1 = 0 would make x undefined: the swap to x divides by b1.
  if (!(b1 > 0.0 && b1 < 1.0)) bad = fmt::format("beta1 = {} (must be in (0, 1))", b1);
  if (!(b2 >= 0.0 && b2 < 1.0)) bad = fmt::format("beta2 = {} (must be in [0, 1))", b2);
  if (!(o.eps() >= 0.0)) bad = fmt::format("eps = {} (must be >= 0)", o.eps());
  if (!(o.weight_decay() >= 0.0)) {
    bad = fmt::format("weight_decay = {} (must be >= 0)", o.weight_decay());
  }
  if (!(o.r() >= 0.0)) bad = fmt::format("r = {} (must be >= 0)", o.r());
  if (!(o.weight_lr_power() >= 0.0)) {
    bad = fmt::format("weight_lr_power = {} (must be >= 0)", o.weight_lr_power());
  }
  if (!bad.empty()) throw Error("Schedule-Free AdamW options: " + bad);
}

// The step's scalars of one group, computed as the package does (it advances the group's running
// values whether or not any parameter has a gradient).
struct SfStepScalars {
  double lr = 0.0;
  double ckp1 = 0.0;
  double bias_correction2 = 1.0;
  double y_step = 0.0;  // lr * (b1 * (1 - ckp1) - 1): the coefficient of u in y's update
};

SfStepScalars sf_advance(SfOptions& o) {
  const auto [b1, b2] = o.betas();
  const auto k = static_cast<double>(o.k());
  SfStepScalars s;
  s.lr = o.lr();
  s.bias_correction2 = 1.0 - std::pow(b2, k + 1.0);
  o.lr_max(std::max(s.lr, o.lr_max()));
  const double weight = std::pow(k + 1.0, o.r()) * std::pow(o.lr_max(), o.weight_lr_power());
  o.weight_sum(o.weight_sum() + weight);
  s.ckp1 = o.weight_sum() != 0.0 ? weight / o.weight_sum() : 0.0;
  s.y_step = s.lr * (b1 * (1.0 - s.ckp1) - 1.0);
  o.k(o.k() + 1);
  return s;
}

// The per-tensor reference: the package's loop body, op for op (u is a new tensor, not p.grad).
void sf_tensor_step(const torch::Tensor& y, const torch::Tensor& g, SfParamState& st,
                    const SfOptions& o, const SfStepScalars& s) {
  const auto [b1, b2] = o.betas();
  (void)b1;
  torch::Tensor& v = st.exp_avg_sq();
  v.mul_(b2).addcmul_(g, g, 1.0 - b2);
  const torch::Tensor denom = v.div(s.bias_correction2).sqrt_().add_(o.eps());
  torch::Tensor u = g.div(denom);
  if (o.weight_decay() != 0.0) u.add_(y, o.weight_decay());
  y.lerp_(st.z(), s.ckp1);
  y.add_(u, s.y_step);
  st.z().sub_(u, s.lr);
}

// The same ops over the lists of one bucket (the package's foreach branch).
void sf_foreach_step(std::vector<at::Tensor>& y, const std::vector<at::Tensor>& g,
                     std::vector<at::Tensor>& z, std::vector<at::Tensor>& v, const SfOptions& o,
                     const SfStepScalars& s) {
  const auto [b1, b2] = o.betas();
  (void)b1;
  at::_foreach_mul_(v, b2);
  at::_foreach_addcmul_(v, g, g, 1.0 - b2);
  std::vector<at::Tensor> denom = at::_foreach_div(v, s.bias_correction2);
  at::_foreach_sqrt_(denom);
  at::_foreach_add_(denom, o.eps());
  std::vector<at::Tensor> u = at::_foreach_div(g, denom);
  if (o.weight_decay() != 0.0) at::_foreach_add_(u, y, o.weight_decay());
  at::_foreach_lerp_(y, z, s.ckp1);
  at::_foreach_add_(y, u, s.y_step);
  at::_foreach_sub_(z, u, s.lr);
}

}  // namespace

ScheduleFreeAdamW::ScheduleFreeAdamW(std::vector<torch::optim::OptimizerParamGroup> param_groups,
                                     SfOptions defaults)
    // The base takes the groups by const reference: param_groups is still whole below.
    : torch::optim::Optimizer(param_groups, std::make_unique<SfOptions>(defaults)) {
  keep_group_options(*this, param_groups);
  validate(defaults);
  for (const auto& group : param_groups_) validate(static_cast<const SfOptions&>(group.options()));
}

ScheduleFreeAdamW::ScheduleFreeAdamW(std::vector<torch::Tensor> params, SfOptions defaults)
    : ScheduleFreeAdamW(
          std::vector<torch::optim::OptimizerParamGroup>{
              torch::optim::OptimizerParamGroup(std::move(params))},
          std::move(defaults)) {}

const SfParamState* ScheduleFreeAdamW::param_state(const torch::Tensor& param) const {
  auto it = state_.find(state_key(param));
  return it == state_.end() ? nullptr : static_cast<const SfParamState*>(it->second.get());
}

torch::Tensor ScheduleFreeAdamW::step(LossClosure closure) {
  if (holds_eval_weights()) {
    throw Error(
        "Schedule-Free AdamW: step() while the parameters hold the evaluation weights (x); call "
        "train_weights() first (TrainingOptimizer's EvalWeights guard does after evaluations)");
  }
  torch::Tensor loss;
  if (closure) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  at::NoGradGuard no_grad;
  for (auto& group : param_groups_) {
    auto& o = static_cast<SfOptions&>(group.options());
    const SfStepScalars s = sf_advance(o);
    std::vector<at::Tensor> params;
    std::vector<detail::BucketKey> keys;
    for (const torch::Tensor& p : group.params()) {
      if (!p.grad().defined()) continue;
      if (p.grad().is_sparse()) {
        throw Error(
            fmt::format("Schedule-Free AdamW: sparse gradient of a parameter of {} "
                        "elements (the update is dense; use a dense embedding)",
                        p.numel()));
      }
      auto& slot = state_[state_key(p)];
      if (!slot) slot = std::make_unique<SfParamState>();
      auto& st = static_cast<SfParamState&>(*slot);
      if (!st.z().defined()) {
        st.z(p.clone(at::MemoryFormat::Preserve));  // z starts at the initial weights
        st.exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
      }
      if (!o.foreach ()) {
        sf_tensor_step(p, p.grad(), st, o, s);
        continue;
      }
      params.push_back(p);
      keys.push_back({0, p.device(), {p.scalar_type(), p.grad().scalar_type()}});
    }
    for (const std::vector<size_t>& members : detail::bucket_indices(keys)) {
      std::vector<at::Tensor> y;
      std::vector<at::Tensor> g;
      std::vector<at::Tensor> z;
      std::vector<at::Tensor> v;
      for (size_t i : members) {
        auto& st = static_cast<SfParamState&>(*state_[state_key(params[i])]);
        y.push_back(params[i]);
        g.push_back(params[i].grad());
        z.push_back(st.z());
        v.push_back(st.exp_avg_sq());
      }
      sf_foreach_step(y, g, z, v, o, s);
    }
  }
  return loss;
}

// x = y + (1 - 1/b1) (z - y), with y kept for the way back.
void ScheduleFreeAdamW::eval_weights() {
  at::NoGradGuard no_grad;
  for (auto& group : param_groups_) {
    auto& o = static_cast<SfOptions&>(group.options());
    if (!o.train_mode()) continue;
    const double b1 = std::get<0>(o.betas());
    for (const torch::Tensor& p : group.params()) {
      auto it = state_.find(state_key(p));
      if (it == state_.end()) continue;
      auto& st = static_cast<SfParamState&>(*it->second);
      if (!st.z().defined()) continue;
      st.y(p.clone(at::MemoryFormat::Preserve));
      p.lerp_(st.z().to(p.device()), 1.0 - 1.0 / b1);
    }
    o.train_mode(false);
  }
}

// y as it was; the package's formula x + (1 - b1) (z - x) only where no y was kept.
void ScheduleFreeAdamW::train_weights() {
  at::NoGradGuard no_grad;
  for (auto& group : param_groups_) {
    auto& o = static_cast<SfOptions&>(group.options());
    if (o.train_mode()) continue;
    const double b1 = std::get<0>(o.betas());
    for (const torch::Tensor& p : group.params()) {
      auto it = state_.find(state_key(p));
      if (it == state_.end()) continue;
      auto& st = static_cast<SfParamState&>(*it->second);
      if (st.y().defined()) {
        p.copy_(st.y());
        st.y(torch::Tensor());
      } else if (st.z().defined()) {
        p.lerp_(st.z().to(p.device()), 1.0 - b1);
      }
    }
    o.train_mode(true);
  }
}

bool ScheduleFreeAdamW::holds_eval_weights() const {
  return std::any_of(param_groups_.begin(), param_groups_.end(), [](const auto& group) {
    return !static_cast<const SfOptions&>(group.options()).train_mode();
  });
}

void ScheduleFreeAdamW::save(torch::serialize::OutputArchive& archive) const {
  serialize(*this, archive);
}

void ScheduleFreeAdamW::load(torch::serialize::InputArchive& archive) { serialize(*this, archive); }

}  // namespace batchlab::optim
