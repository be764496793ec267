#include "core/optim/lion.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <memory>
#include <string>

#include "core/errors.h"
#include "core/optim/foreach_common.h"
#include "core/optim/group_options.h"
#include "core/optim/state_key.h"

namespace batchlab::optim {

LionOptions::LionOptions(double lr) : lr_(lr) {}

bool operator==(const LionOptions& a, const LionOptions& b) {
  return a.lr() == b.lr() && a.betas() == b.betas() && a.weight_decay() == b.weight_decay() &&
         a.foreach () == b.foreach ();
}

void LionOptions::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(lr);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(betas);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(weight_decay);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(foreach);
}

void LionOptions::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, lr);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(betas_t, betas);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, weight_decay);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, foreach);
}

bool operator==(const LionParamState& a, const LionParamState& b) {
  return a.step() == b.step() && a.exp_avg().defined() == b.exp_avg().defined() &&
         (!a.exp_avg().defined() || at::equal(a.exp_avg(), b.exp_avg()));
}

void LionParamState::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(step);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(exp_avg);
}

void LionParamState::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(int64_t, step);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, exp_avg);
}

namespace {

void validate(const LionOptions& o) {
  const auto [b1, b2] = o.betas();
  std::string bad;
  if (!(o.lr() >= 0.0)) bad = fmt::format("lr = {} (must be >= 0)", o.lr());
  // lion-pytorch accepts betas in [0, 1]; b2 = 1 would freeze the momentum at zero forever.
  if (!(b1 >= 0.0 && b1 <= 1.0)) bad = fmt::format("beta1 = {} (must be in [0, 1])", b1);
  if (!(b2 >= 0.0 && b2 < 1.0)) bad = fmt::format("beta2 = {} (must be in [0, 1))", b2);
  if (!(o.weight_decay() >= 0.0)) {
    bad = fmt::format("weight_decay = {} (must be >= 0)", o.weight_decay());
  }
  if (!bad.empty()) throw Error("Lion options: " + bad);
}

// The per-tensor reference: lion-pytorch's update_fn, op for op.
void lion_tensor_step(const torch::Tensor& p, const torch::Tensor& g, torch::Tensor& m,
                      const LionOptions& o) {
  const auto [b1, b2] = o.betas();
  if (o.weight_decay() != 0.0) p.mul_(1.0 - o.lr() * o.weight_decay());
  const torch::Tensor c = m.mul(b1).add_(g, 1.0 - b1).sign_();
  p.add_(c, -o.lr());
  m.mul_(b2).add_(g, 1.0 - b2);
}

struct LionItem {
  torch::Tensor param;
  torch::Tensor grad;
  torch::Tensor exp_avg;
  const LionOptions* options = nullptr;
  int64_t group = 0;
};

// The same ops over lists: one bucket = one group, device and set of dtypes.
void lion_foreach_step(const std::vector<LionItem>& items) {
  std::vector<detail::BucketKey> keys;
  keys.reserve(items.size());
  for (const LionItem& it : items) {
    keys.push_back({it.group,
                    it.param.device(),
                    {it.param.scalar_type(), it.grad.scalar_type(), it.exp_avg.scalar_type()}});
  }
  for (const std::vector<size_t>& members : detail::bucket_indices(keys)) {
    const LionOptions& o = *items[members.front()].options;
    const auto [b1, b2] = o.betas();
    std::vector<at::Tensor> p;
    std::vector<at::Tensor> g;
    std::vector<at::Tensor> m;
    for (size_t i : members) {
      p.push_back(items[i].param);
      g.push_back(items[i].grad);
      m.push_back(items[i].exp_avg);
    }
    if (o.weight_decay() != 0.0) at::_foreach_mul_(p, 1.0 - o.lr() * o.weight_decay());
    std::vector<at::Tensor> c = at::_foreach_mul(m, b1);
    at::_foreach_add_(c, g, 1.0 - b1);
    at::_foreach_sign_(c);
    at::_foreach_add_(p, c, -o.lr());
    at::_foreach_mul_(m, b2);
    at::_foreach_add_(m, g, 1.0 - b2);
  }
}

}  // namespace

Lion::Lion(std::vector<torch::optim::OptimizerParamGroup> param_groups, LionOptions defaults)
    // The base takes the groups by const reference: param_groups is still whole below.
    : torch::optim::Optimizer(param_groups, std::make_unique<LionOptions>(defaults)) {
  keep_group_options(*this, param_groups);
  validate(defaults);
  for (const auto& group : param_groups_)
    validate(static_cast<const LionOptions&>(group.options()));
}

Lion::Lion(std::vector<torch::Tensor> params, LionOptions defaults)
    : Lion(std::vector<torch::optim::OptimizerParamGroup>{torch::optim::OptimizerParamGroup(
               std::move(params))},
           std::move(defaults)) {}

const LionParamState* Lion::param_state(const torch::Tensor& param) const {
  auto it = state_.find(state_key(param));
  return it == state_.end() ? nullptr : static_cast<const LionParamState*>(it->second.get());
}

torch::Tensor Lion::step(LossClosure closure) {
  torch::Tensor loss;
  if (closure) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  at::NoGradGuard no_grad;
  std::vector<LionItem> multi;
  int64_t group_index = -1;
  for (auto& group : param_groups_) {
    ++group_index;
    const auto& o = static_cast<const LionOptions&>(group.options());
    for (const torch::Tensor& p : group.params()) {
      if (!p.grad().defined()) continue;
      if (p.grad().is_sparse()) {
        throw Error(
            fmt::format("Lion: sparse gradient of a parameter of {} elements (Lion's "
                        "sign update is dense; use a dense embedding)",
                        p.numel()));
      }
      auto& slot = state_[state_key(p)];
      if (!slot) slot = std::make_unique<LionParamState>();
      auto& st = static_cast<LionParamState&>(*slot);
      if (!st.exp_avg().defined()) st.exp_avg(at::zeros_like(p, at::MemoryFormat::Preserve));
      st.step(st.step() + 1);
      if (o.foreach ()) {
        multi.push_back({p, p.grad(), st.exp_avg(), &o, group_index});
      } else {
        lion_tensor_step(p, p.grad(), st.exp_avg(), o);
      }
    }
  }
  if (!multi.empty()) lion_foreach_step(multi);
  return loss;
}

void Lion::save(torch::serialize::OutputArchive& archive) const { serialize(*this, archive); }

void Lion::load(torch::serialize::InputArchive& archive) { serialize(*this, archive); }

}  // namespace batchlab::optim
