#include "core/optim/lamb.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "core/errors.h"
#include "core/optim/foreach_lamb.h"
#include "core/optim/fused_kernels.h"
#include "core/optim/grad_clip.h"
#include "core/optim/group_options.h"
#include "core/optim/multi_tensor.h"
#include "core/optim/state_key.h"

namespace batchlab::optim {

LambOptions::LambOptions(double lr) : lr_(lr) {}

bool operator==(const LambOptions& a, const LambOptions& b) {
  return a.lr() == b.lr() && a.betas() == b.betas() && a.eps() == b.eps() &&
         a.weight_decay() == b.weight_decay() && a.bias_correction() == b.bias_correction() &&
         a.grad_averaging() == b.grad_averaging() && a.max_grad_norm() == b.max_grad_norm() &&
         a.trust_clip() == b.trust_clip() && a.always_adapt() == b.always_adapt() &&
         a.adapt() == b.adapt() && a.fused() == b.fused() && a.foreach () == b.foreach ();
}

void LambOptions::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(lr);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(betas);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(eps);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(weight_decay);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(bias_correction);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(grad_averaging);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(max_grad_norm);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(trust_clip);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(always_adapt);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(adapt);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(fused);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(foreach);
}

void LambOptions::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, lr);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(betas_t, betas);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, eps);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, weight_decay);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, bias_correction);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, grad_averaging);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, max_grad_norm);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, trust_clip);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, always_adapt);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, adapt);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, fused);
  // Added later: checkpoints written before it have no entry and get the default.
  c10::IValue foreach_value;
  if (archive.try_read("foreach", foreach_value))
    foreach (foreach_value.toBool())
      ;
}

bool operator==(const LambParamState& a, const LambParamState& b) {
  auto same = [](const torch::Tensor& x, const torch::Tensor& y) {
    return x.defined() == y.defined() && (!x.defined() || at::equal(x, y));
  };
  return a.step() == b.step() && same(a.exp_avg(), b.exp_avg()) &&
         same(a.exp_avg_sq(), b.exp_avg_sq()) && same(a.trust_ratio(), b.trust_ratio());
}

void LambParamState::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(step);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(exp_avg);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(exp_avg_sq);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(trust_ratio);
}

void LambParamState::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(int64_t, step);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, exp_avg);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, exp_avg_sq);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, trust_ratio);
}

namespace detail {

kernels::LambScalars lamb_scalars(const LambOptions& o, int64_t t, double grad_scale) {
  const auto [b1, b2] = o.betas();
  kernels::LambScalars s;
  s.grad_scale = grad_scale;
  s.beta1 = b1;
  s.beta3 = o.grad_averaging() ? 1.0 - b1 : 1.0;
  s.beta2 = b2;
  const double bc1 = o.bias_correction() ? 1.0 - std::pow(b1, static_cast<double>(t)) : 1.0;
  const double bc2 = o.bias_correction() ? 1.0 - std::pow(b2, static_cast<double>(t)) : 1.0;
  s.inv_bc1 = 1.0 / bc1;
  s.inv_sqrt_bc2 = 1.0 / std::sqrt(bc2);
  s.eps = o.eps();
  s.weight_decay = o.weight_decay();
  return s;
}

double lamb_trust_ratio(const LambOptions& o, double w_norm, double r_norm) {
  double ratio = (w_norm > 0.0 && r_norm > 0.0) ? w_norm / r_norm : 1.0;
  if (o.trust_clip()) ratio = std::min(ratio, 1.0);
  return ratio;
}

}  // namespace detail

namespace {

void validate(const LambOptions& o) {
  const auto [b1, b2] = o.betas();
  std::string bad;
  if (!(o.lr() >= 0.0)) bad = fmt::format("lr = {} (must be >= 0)", o.lr());
  if (!(b1 >= 0.0 && b1 < 1.0)) bad = fmt::format("beta1 = {} (must be in [0, 1))", b1);
  if (!(b2 >= 0.0 && b2 < 1.0)) bad = fmt::format("beta2 = {} (must be in [0, 1))", b2);
  if (!(o.eps() >= 0.0)) bad = fmt::format("eps = {} (must be >= 0)", o.eps());
  if (!(o.weight_decay() >= 0.0)) {
    bad = fmt::format("weight_decay = {} (must be >= 0)", o.weight_decay());
  }
  if (!(o.max_grad_norm() >= 0.0)) {
    bad = fmt::format("max_grad_norm = {} (must be >= 0; 0 is off)", o.max_grad_norm());
  }
  if (!bad.empty()) throw Error("LAMB options: " + bad);
}

bool adapted(const LambOptions& o) { return o.adapt() || o.always_adapt(); }

// The same update with ATen ops (any device, dtype or layout); nothing is read back to the host.
void aten_step(const torch::Tensor& p, LambParamState& st, const LambOptions& o,
               const ClipFactor& clip) {
  const kernels::LambScalars s = detail::lamb_scalars(o, st.step(), 1.0);
  torch::Tensor g = p.grad();
  if (clip.host) {
    if (*clip.host != 1.0) g = g.div(*clip.host);
  } else if (clip.tensor.defined()) {
    g = g.div(clip.tensor.to(g.scalar_type()));
  }
  torch::Tensor& m = st.exp_avg();
  torch::Tensor& v = st.exp_avg_sq();
  m.mul_(s.beta1).add_(g, s.beta3);
  v.mul_(s.beta2).addcmul_(g, g, 1.0 - s.beta2);
  const torch::Tensor denom = v.sqrt().mul_(s.inv_sqrt_bc2).add_(s.eps);
  torch::Tensor update = m.mul(s.inv_bc1).div_(denom);
  if (s.weight_decay != 0.0) update.add_(p, s.weight_decay);
  if (adapted(o)) {
    const torch::Tensor w_norm = at::linalg_vector_norm(p);
    const torch::Tensor r_norm = at::linalg_vector_norm(update);
    torch::Tensor ratio =
        at::where((w_norm > 0).logical_and(r_norm > 0), w_norm / r_norm, at::ones_like(w_norm));
    if (o.trust_clip()) ratio = ratio.clamp_max(1.0);
    st.trust_ratio().copy_(ratio);
    update.mul_(ratio);
  }
  p.add_(update, -o.lr());
}

// One parameter of the fused CPU path, with everything the parallel loops need as plain values.
struct LambFusedItem {
  torch::Tensor param;
  LambParamState* state = nullptr;
  const LambOptions* options = nullptr;
  void* w = nullptr;
  const void* g = nullptr;
  void* m = nullptr;
  void* v = nullptr;
  bool is_float = true;
  bool adapted = false;
  int64_t numel = 0;
  kernels::LambScalars scalars;
  double step_size = 0.0;  // lr * trust ratio
};

template <class T>
void first_chunk(const LambFusedItem& it, const detail::Chunk& ch, double* partial) {
  const int64_t b = ch.begin;
  const int64_t n = ch.end - ch.begin;
  T* m = static_cast<T*>(it.m) + b;
  T* v = static_cast<T*>(it.v) + b;
  const T* g = static_cast<const T*>(it.g) + b;
  if (it.adapted) {
    kernels::lamb_moments(g, m, v, static_cast<const T*>(it.w) + b, n, it.scalars, partial);
  } else {
    kernels::lamb_fused(static_cast<T*>(it.w) + b, g, m, v, n, it.scalars, it.step_size);
  }
}

template <class T>
void second_chunk(const LambFusedItem& it, const detail::Chunk& ch) {
  const int64_t b = ch.begin;
  kernels::lamb_apply(static_cast<T*>(it.w) + b, static_cast<const T*>(it.m) + b,
                      static_cast<const T*>(it.v) + b, ch.end - ch.begin, it.scalars, it.step_size);
}

// Pass 1: moments of every tensor, with ||w||^2 and ||r||^2 of the adapted ones (the others are
// updated completely, needing no norms); then the ratios; pass 2: w -= lr * ratio * r of the
// adapted ones. Both passes run wave by wave (multi_tensor.h), so pass 2 reads m, v and w from
// cache.
void fused_step(std::vector<LambFusedItem>& items) {
  detail::TwoPassWork work;
  for (const LambFusedItem& it : items) {
    const int64_t elem = it.is_float ? 4 : 8;
    work.numels.push_back(it.numel);
    work.bytes.push_back(it.numel * elem * 4);
    work.in_first.push_back(true);
    work.in_second.push_back(it.adapted);
  }
  work.first = [&](const detail::Chunk& ch, double* partial) {
    const LambFusedItem& it = items[ch.item];
    it.is_float ? first_chunk<float>(it, ch, partial) : first_chunk<double>(it, ch, partial);
  };
  work.between = [&](int64_t i, const double sums[2]) {
    LambFusedItem& it = items[i];
    if (!it.adapted) return;
    const double ratio =
        detail::lamb_trust_ratio(*it.options, std::sqrt(sums[0]), std::sqrt(sums[1]));
    *it.state->trust_ratio().data_ptr<double>() = ratio;
    it.step_size = it.options->lr() * ratio;
  };
  work.second = [&](const detail::Chunk& ch) {
    const LambFusedItem& it = items[ch.item];
    it.is_float ? second_chunk<float>(it, ch) : second_chunk<double>(it, ch);
  };
  detail::run_two_pass(work);
  for (const LambFusedItem& it : items) {
    detail::bump_version(it.param);
    detail::bump_version(it.state->exp_avg());
    detail::bump_version(it.state->exp_avg_sq());
  }
}

}  // namespace

Lamb::Lamb(std::vector<torch::optim::OptimizerParamGroup> param_groups, LambOptions defaults)
    // The base takes the groups by const reference: param_groups is still whole below.
    : torch::optim::Optimizer(param_groups, std::make_unique<LambOptions>(defaults)) {
  keep_group_options(*this, param_groups);
  validate(defaults);
  for (const auto& group : param_groups_)
    validate(static_cast<const LambOptions&>(group.options()));
}

Lamb::Lamb(std::vector<torch::Tensor> params, LambOptions defaults)
    : Lamb(std::vector<torch::optim::OptimizerParamGroup>{torch::optim::OptimizerParamGroup(
               std::move(params))},
           std::move(defaults)) {}

const LambParamState* Lamb::param_state(const torch::Tensor& param) const {
  auto it = state_.find(state_key(param));
  return it == state_.end() ? nullptr : static_cast<const LambParamState*>(it->second.get());
}

at::Tensor Lamb::trust_ratio(const at::Tensor& param) const {
  const LambParamState* st = param_state(param);
  return st != nullptr ? st->trust_ratio() : at::Tensor();
}

// Like timm, the value of the defaults applies to all groups at once.
double Lamb::max_grad_norm() const {
  return static_cast<const LambOptions&>(defaults()).max_grad_norm();
}

torch::Tensor Lamb::step(LossClosure closure) {
  torch::Tensor loss;
  if (closure) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  at::NoGradGuard no_grad;
  GradNorm norm;
  if (max_grad_norm() > 0.0) {
    std::vector<torch::Tensor> all;
    for (const auto& group : param_groups_) {
      all.insert(all.end(), group.params().begin(), group.params().end());
    }
    // A fused step measures on the host; otherwise the norm stays on the device, as on a GPU.
    norm = global_grad_norm(all, static_cast<const LambOptions&>(defaults()).fused());
  }
  step_with_grad_norm(norm);
  return loss;
}

void Lamb::step_with_grad_norm(const GradNorm& grad_norm) {
  at::NoGradGuard no_grad;
  // Global clipping first: the factor depends on every group's gradients (timm, apex).
  ClipFactor clip;
  if (max_grad_norm() > 0.0 && grad_norm.norm.defined()) {
    clip = clip_factor(grad_norm, max_grad_norm());
  }
  // The fused loops take the factor as a plain number; a device-side factor means ATen ops.
  const bool host_clip = clip.host.has_value() || !clip.tensor.defined();
  const double grad_scale = clip.host ? 1.0 / *clip.host : 1.0;

  std::vector<LambFusedItem> fused;
  std::vector<detail::LambForeachItem> multi;
  int64_t group_index = -1;
  for (auto& group : param_groups_) {
    ++group_index;
    const auto& o = static_cast<const LambOptions&>(group.options());
    for (const torch::Tensor& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& slot = state_[state_key(p)];
      if (!slot) slot = std::make_unique<LambParamState>();
      auto& st = static_cast<LambParamState&>(*slot);
      if (!st.exp_avg().defined()) {
        st.exp_avg(at::zeros_like(p, at::MemoryFormat::Preserve));
        st.exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
      }
      st.step(st.step() + 1);
      const torch::Tensor& g = p.grad();
      const torch::Tensor& tr = st.trust_ratio();
      const bool fusable = o.fused() && host_clip && !g.is_sparse() &&
                           detail::fusable({&p, &g, &st.exp_avg(), &st.exp_avg_sq()}) &&
                           (!adapted(o) || detail::fusable_trust_ratio(tr));
      if (!fusable && o.foreach () && !g.is_sparse()) {
        multi.push_back({p, g, &st, &o, group_index});  // its trust ratio is made there
        continue;
      }
      if (adapted(o) && !tr.defined()) {
        st.trust_ratio(at::zeros({}, p.options().dtype(at::kDouble)));
      }
      if (!fusable) {
        aten_step(p, st, o, clip);
        continue;
      }
      LambFusedItem it;
      it.param = p;
      it.state = &st;
      it.options = &o;
      it.w = p.data_ptr();
      it.g = g.data_ptr();
      it.m = st.exp_avg().data_ptr();
      it.v = st.exp_avg_sq().data_ptr();
      it.is_float = p.scalar_type() == at::kFloat;
      it.adapted = adapted(o);
      it.numel = p.numel();
      it.scalars = detail::lamb_scalars(o, st.step(), grad_scale);
      it.step_size = o.lr();
      fused.push_back(std::move(it));
    }
  }
  if (!fused.empty()) fused_step(fused);
  detail::lamb_foreach_step(multi, clip);
}

void Lamb::save(torch::serialize::OutputArchive& archive) const { serialize(*this, archive); }

void Lamb::load(torch::serialize::InputArchive& archive) { serialize(*this, archive); }

}  // namespace batchlab::optim
