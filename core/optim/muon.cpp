#include "core/optim/muon.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

#include "core/errors.h"
#include "core/optim/foreach_common.h"
#include "core/optim/group_options.h"
#include "core/optim/state_key.h"

namespace batchlab::optim {

MuonOptions::MuonOptions(double lr) : lr_(lr) {}

bool operator==(const MuonOptions& a, const MuonOptions& b) {
  return a.lr() == b.lr() && a.weight_decay() == b.weight_decay() &&
         a.orthogonalize() == b.orthogonalize() && a.momentum() == b.momentum() &&
         a.nesterov() == b.nesterov() && a.ns_coefficients() == b.ns_coefficients() &&
         a.ns_steps() == b.ns_steps() && a.ns_eps() == b.ns_eps() && a.ns_dtype() == b.ns_dtype() &&
         a.adjust_lr() == b.adjust_lr() && a.betas() == b.betas() && a.eps() == b.eps() &&
         a.foreach () == b.foreach ();
}

void MuonOptions::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(lr);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(weight_decay);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(orthogonalize);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(momentum);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(nesterov);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(ns_coefficients);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(ns_steps);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(ns_eps);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(ns_dtype);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(adjust_lr);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(betas);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(eps);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(foreach);
}

void MuonOptions::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, lr);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, weight_decay);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, orthogonalize);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, momentum);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, nesterov);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(coefficients_t, ns_coefficients);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(int64_t, ns_steps);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, ns_eps);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(std::string, ns_dtype);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(std::string, adjust_lr);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(betas_t, betas);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, eps);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, foreach);
}

bool operator==(const MuonParamState& a, const MuonParamState& b) {
  auto same = [](const torch::Tensor& x, const torch::Tensor& y) {
    return x.defined() == y.defined() && (!x.defined() || at::equal(x, y));
  };
  return a.step() == b.step() && same(a.momentum_buffer(), b.momentum_buffer()) &&
         same(a.exp_avg(), b.exp_avg()) && same(a.exp_avg_sq(), b.exp_avg_sq());
}

void MuonParamState::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(step);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(momentum_buffer);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(exp_avg);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(exp_avg_sq);
}

void MuonParamState::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(int64_t, step);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, momentum_buffer);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, exp_avg);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, exp_avg_sq);
}

namespace detail {

double muon_lr_factor(const std::string& adjust_lr, int64_t rows, int64_t cols) {
  const auto a = static_cast<double>(rows);
  const auto b = static_cast<double>(cols);
  if (adjust_lr == "original") return std::sqrt(std::max(1.0, a / b));
  if (adjust_lr == "match_rms_adamw") return 0.2 * std::sqrt(std::max(a, b));
  if (adjust_lr == "spectral_unclamped") return std::sqrt(a / b);
  throw Error(
      fmt::format("Muon: adjust_lr = \"{}\" (must be \"original\", \"match_rms_adamw\" or "
                  "\"spectral_unclamped\")",
                  adjust_lr));
}

NewtonSchulz newton_schulz_of(const MuonOptions& o) {
  NewtonSchulz ns;
  const auto [a, b, c] = o.ns_coefficients();
  ns.coefficients = {a, b, c};
  ns.steps = o.ns_steps();
  ns.eps = o.ns_eps();
  ns.dtype = o.ns_dtype() == "fp32" ? at::kFloat : at::kBFloat16;
  return ns;
}

}  // namespace detail

namespace {

void validate(const MuonOptions& o) {
  const auto [b1, b2] = o.betas();
  std::string bad;
  if (!(o.lr() >= 0.0)) bad = fmt::format("lr = {} (must be >= 0)", o.lr());
  if (!(o.weight_decay() >= 0.0)) {
    bad = fmt::format("weight_decay = {} (must be >= 0)", o.weight_decay());
  }
  if (!(o.momentum() >= 0.0 && o.momentum() < 1.0)) {
    bad = fmt::format("momentum = {} (must be in [0, 1))", o.momentum());
  }
  if (o.ns_steps() < 0 || o.ns_steps() >= 100) {
    bad = fmt::format("ns_steps = {} (must be in [0, 100), as torch's)", o.ns_steps());
  }
  if (!(o.ns_eps() > 0.0)) bad = fmt::format("ns_eps = {} (must be > 0)", o.ns_eps());
  if (o.ns_dtype() != "bf16" && o.ns_dtype() != "fp32") {
    bad = fmt::format("ns_dtype = \"{}\" (must be \"bf16\" or \"fp32\")", o.ns_dtype());
  }
  detail::muon_lr_factor(o.adjust_lr(), 1, 1);  // throws on an unknown name
  if (!(b1 >= 0.0 && b1 < 1.0)) bad = fmt::format("beta1 = {} (must be in [0, 1))", b1);
  if (!(b2 >= 0.0 && b2 < 1.0)) bad = fmt::format("beta2 = {} (must be in [0, 1))", b2);
  if (!(o.eps() >= 0.0)) bad = fmt::format("eps = {} (must be >= 0)", o.eps());
  if (!bad.empty()) throw Error("Muon options: " + bad);
}

// torch's _single_tensor_muon body for one matrix.
void muon_tensor_step(const torch::Tensor& p, const torch::Tensor& g, MuonParamState& st,
                      const MuonOptions& o) {
  torch::Tensor& buf = st.momentum_buffer();
  buf.lerp_(g, 1.0 - o.momentum());
  const torch::Tensor u = o.nesterov() ? g.lerp(buf, o.momentum()) : buf;
  const torch::Tensor ortho = newton_schulz(u, detail::newton_schulz_of(o));
  const double rate = o.lr() * detail::muon_lr_factor(o.adjust_lr(), p.size(0), p.size(1));
  if (o.weight_decay() != 0.0) p.mul_(1.0 - o.lr() * o.weight_decay());
  p.add_(ortho, -rate);
}

// torch.optim.AdamW's per-tensor body (_single_tensor_adam with decoupled weight decay).
void adamw_tensor_step(const torch::Tensor& p, const torch::Tensor& g, MuonParamState& st,
                       const MuonOptions& o) {
  const auto [b1, b2] = o.betas();
  const auto t = static_cast<double>(st.step());
  if (o.weight_decay() != 0.0) p.mul_(1.0 - o.lr() * o.weight_decay());
  st.exp_avg().lerp_(g, 1.0 - b1);
  st.exp_avg_sq().mul_(b2).addcmul_(g, g, 1.0 - b2);
  const double step_size = o.lr() / (1.0 - std::pow(b1, t));
  const double bc2_sqrt = std::sqrt(1.0 - std::pow(b2, t));
  const torch::Tensor denom = (st.exp_avg_sq().sqrt() / bc2_sqrt).add_(o.eps());
  p.addcdiv_(st.exp_avg(), denom, -step_size);
}

struct MuonItem {
  torch::Tensor param;
  torch::Tensor grad;
  MuonParamState* state = nullptr;
  const MuonOptions* options = nullptr;
  int64_t group = 0;
};

// The Muon rule over one bucket: elementwise work as list ops, Newton-Schulz per matrix, and the
// final add in sub-lists of equal rate factor (one alpha per _foreach_add_).
void muon_foreach(const std::vector<MuonItem>& items, const std::vector<size_t>& members) {
  const MuonOptions& o = *items[members.front()].options;
  std::vector<at::Tensor> p;
  std::vector<at::Tensor> g;
  std::vector<at::Tensor> buf;
  for (size_t i : members) {
    p.push_back(items[i].param);
    g.push_back(items[i].grad);
    buf.push_back(items[i].state->momentum_buffer());
  }
  at::_foreach_lerp_(buf, g, 1.0 - o.momentum());
  const std::vector<at::Tensor> u = o.nesterov() ? at::_foreach_lerp(g, buf, o.momentum()) : buf;
  if (o.weight_decay() != 0.0) at::_foreach_mul_(p, 1.0 - o.lr() * o.weight_decay());
  const NewtonSchulz ns = detail::newton_schulz_of(o);
  // Rate factor -> (parameters, updates); converting the update to the parameter's dtype is exact
  // (bf16 and fp32 values are all float32 and float64 values), and the add then runs on one dtype.
  std::map<double, std::pair<std::vector<at::Tensor>, std::vector<at::Tensor>>> by_rate;
  for (size_t j = 0; j < p.size(); ++j) {
    auto& lists = by_rate[detail::muon_lr_factor(o.adjust_lr(), p[j].size(0), p[j].size(1))];
    lists.first.push_back(p[j]);
    lists.second.push_back(newton_schulz(u[j], ns).to(p[j].scalar_type()));
  }
  for (auto& [factor, lists] : by_rate) {
    at::_foreach_add_(lists.first, lists.second, -o.lr() * factor);
  }
}

// torch's AdamW over one bucket, with per-tensor bias corrections as scalar lists.
void adamw_foreach(const std::vector<MuonItem>& items, const std::vector<size_t>& members) {
  const MuonOptions& o = *items[members.front()].options;
  const auto [b1, b2] = o.betas();
  std::vector<at::Tensor> p;
  std::vector<at::Tensor> g;
  std::vector<at::Tensor> m;
  std::vector<at::Tensor> v;
  std::vector<at::Scalar> bc2_sqrt;
  std::vector<at::Scalar> step_size;
  for (size_t i : members) {
    const MuonItem& it = items[i];
    p.push_back(it.param);
    g.push_back(it.grad);
    m.push_back(it.state->exp_avg());
    v.push_back(it.state->exp_avg_sq());
    const auto t = static_cast<double>(it.state->step());
    bc2_sqrt.emplace_back(std::sqrt(1.0 - std::pow(b2, t)));
    step_size.emplace_back(-o.lr() / (1.0 - std::pow(b1, t)));
  }
  if (o.weight_decay() != 0.0) at::_foreach_mul_(p, 1.0 - o.lr() * o.weight_decay());
  at::_foreach_lerp_(m, g, 1.0 - b1);
  at::_foreach_mul_(v, b2);
  at::_foreach_addcmul_(v, g, g, 1.0 - b2);
  std::vector<at::Tensor> denom = at::_foreach_sqrt(v);
  at::_foreach_div_(denom, bc2_sqrt);
  at::_foreach_add_(denom, o.eps());
  at::_foreach_addcdiv_(p, m, denom, step_size);
}

}  // namespace

Muon::Muon(std::vector<torch::optim::OptimizerParamGroup> param_groups, MuonOptions defaults)
    // The base takes the groups by const reference: param_groups is still whole below.
    : torch::optim::Optimizer(param_groups, std::make_unique<MuonOptions>(defaults)) {
  keep_group_options(*this, param_groups);
  validate(defaults);
  for (const auto& group : param_groups_) {
    const auto& o = static_cast<const MuonOptions&>(group.options());
    validate(o);
    if (!o.orthogonalize()) continue;
    for (const torch::Tensor& p : group.params()) {
      if (p.dim() != 2) {
        throw Error(
            fmt::format("Muon: a parameter of {} dimensions in a group with "
                        "orthogonalize = true; Muon takes 2-D matrices only (give the "
                        "others to a group with orthogonalize = false: AdamW)",
                        p.dim()));
      }
    }
  }
}

Muon::Muon(std::vector<torch::Tensor> params, MuonOptions defaults)
    : Muon(std::vector<torch::optim::OptimizerParamGroup>{torch::optim::OptimizerParamGroup(
               std::move(params))},
           std::move(defaults)) {}

const MuonParamState* Muon::param_state(const torch::Tensor& param) const {
  auto it = state_.find(state_key(param));
  return it == state_.end() ? nullptr : static_cast<const MuonParamState*>(it->second.get());
}

torch::Tensor Muon::step(LossClosure closure) {
  torch::Tensor loss;
  if (closure) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  at::NoGradGuard no_grad;
  std::vector<MuonItem> multi;
  int64_t group_index = -1;
  for (auto& group : param_groups_) {
    ++group_index;
    const auto& o = static_cast<const MuonOptions&>(group.options());
    for (const torch::Tensor& p : group.params()) {
      if (!p.grad().defined()) continue;
      if (p.grad().is_sparse()) {
        throw Error(
            fmt::format("Muon: sparse gradient of a parameter of {} elements (torch's "
                        "Muon and AdamW take dense gradients; use a dense embedding)",
                        p.numel()));
      }
      auto& slot = state_[state_key(p)];
      if (!slot) slot = std::make_unique<MuonParamState>();
      auto& st = static_cast<MuonParamState&>(*slot);
      if (o.orthogonalize() && !st.momentum_buffer().defined()) {
        st.momentum_buffer(at::zeros_like(p.grad(), at::MemoryFormat::Preserve));
      }
      if (!o.orthogonalize() && !st.exp_avg().defined()) {
        st.exp_avg(at::zeros_like(p, at::MemoryFormat::Preserve));
        st.exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
      }
      st.step(st.step() + 1);
      if (o.foreach ()) {
        multi.push_back({p, p.grad(), &st, &o, group_index});
      } else if (o.orthogonalize()) {
        muon_tensor_step(p, p.grad(), st, o);
      } else {
        adamw_tensor_step(p, p.grad(), st, o);
      }
    }
  }
  std::vector<detail::BucketKey> keys;
  keys.reserve(multi.size());
  for (const MuonItem& it : multi) {
    keys.push_back({it.group, it.param.device(), {it.param.scalar_type(), it.grad.scalar_type()}});
  }
  for (const std::vector<size_t>& members : detail::bucket_indices(keys)) {
    if (multi[members.front()].options->orthogonalize()) {
      muon_foreach(multi, members);
    } else {
      adamw_foreach(multi, members);
    }
  }
  return loss;
}

void Muon::save(torch::serialize::OutputArchive& archive) const { serialize(*this, archive); }

void Muon::load(torch::serialize::InputArchive& archive) { serialize(*this, archive); }

}  // namespace batchlab::optim
