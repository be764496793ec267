#include "core/optim/lars.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "core/errors.h"
#include "core/optim/foreach_lars.h"
#include "core/optim/fused_kernels.h"
#include "core/optim/group_options.h"
#include "core/optim/multi_tensor.h"
#include "core/optim/state_key.h"

namespace batchlab::optim {

LarsOptions::LarsOptions(double lr) : lr_(lr) {}

bool operator==(const LarsOptions& a, const LarsOptions& b) {
  return a.lr() == b.lr() && a.momentum() == b.momentum() && a.weight_decay() == b.weight_decay() &&
         a.nesterov() == b.nesterov() && a.trust_coefficient() == b.trust_coefficient() &&
         a.eps() == b.eps() && a.trust_clip() == b.trust_clip() &&
         a.always_adapt() == b.always_adapt() && a.adapt() == b.adapt() &&
         a.lr_in_momentum() == b.lr_in_momentum() && a.fused() == b.fused() &&
         a.foreach () == b.foreach ();
}

void LarsOptions::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(lr);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(momentum);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(weight_decay);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(nesterov);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(trust_coefficient);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(eps);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(trust_clip);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(always_adapt);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(adapt);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(lr_in_momentum);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(fused);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(foreach);
}

void LarsOptions::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, lr);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, momentum);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, weight_decay);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, nesterov);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, trust_coefficient);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, eps);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, trust_clip);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, always_adapt);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, adapt);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, lr_in_momentum);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, fused);
  // Added later: checkpoints written before it have no entry and get the default.
  c10::IValue foreach_value;
  if (archive.try_read("foreach", foreach_value))
    foreach (foreach_value.toBool())
      ;
}

bool operator==(const LarsParamState& a, const LarsParamState& b) {
  auto same = [](const torch::Tensor& x, const torch::Tensor& y) {
    return x.defined() == y.defined() && (!x.defined() || at::equal(x, y));
  };
  return same(a.momentum_buffer(), b.momentum_buffer()) && same(a.trust_ratio(), b.trust_ratio());
}

void LarsParamState::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(momentum_buffer);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(trust_ratio);
}

void LarsParamState::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, momentum_buffer);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, trust_ratio);
}

namespace detail {

double lars_trust_ratio(const LarsOptions& o, double w_norm, double g_norm) {
  double ratio = 1.0;
  if (w_norm > 0.0 && g_norm > 0.0) {
    ratio = o.trust_coefficient() * w_norm / (g_norm + w_norm * o.weight_decay() + o.eps());
  }
  if (o.trust_clip()) ratio = o.lr() > 0.0 ? std::min(ratio / o.lr(), 1.0) : 1.0;
  return ratio;
}

kernels::LarsScalars lars_scalars(const LarsOptions& o, double ratio) {
  kernels::LarsScalars s;
  s.weight_decay = o.weight_decay();
  s.ratio = ratio;
  s.momentum = o.momentum();
  s.in_scale = o.lr_in_momentum() ? o.lr() : 1.0;
  s.out_scale = o.lr_in_momentum() ? 1.0 : o.lr();
  s.nesterov = o.nesterov();
  return s;
}

}  // namespace detail

namespace {

void validate(const LarsOptions& o) {
  std::string bad;
  if (!(o.lr() >= 0.0)) bad = fmt::format("lr = {} (must be >= 0)", o.lr());
  if (!(o.momentum() >= 0.0)) bad = fmt::format("momentum = {} (must be >= 0)", o.momentum());
  if (!(o.weight_decay() >= 0.0)) {
    bad = fmt::format("weight_decay = {} (must be >= 0)", o.weight_decay());
  }
  if (!(o.trust_coefficient() > 0.0)) {
    bad = fmt::format("trust_coefficient = {} (must be > 0)", o.trust_coefficient());
  }
  if (!(o.eps() >= 0.0)) bad = fmt::format("eps = {} (must be >= 0)", o.eps());
  if (o.nesterov() && !(o.momentum() > 0.0)) bad = "nesterov needs momentum > 0";
  if (!bad.empty()) throw Error("LARS options: " + bad);
}

bool adapted(const LarsOptions& o) { return o.adapt() || o.always_adapt(); }

// The same update with ATen ops (any device, dtype or layout); norms stay on the device.
void aten_step(const torch::Tensor& p, LarsParamState& st, const LarsOptions& o) {
  const torch::Tensor& g = p.grad();
  torch::Tensor d;
  if (adapted(o)) {
    const torch::Tensor w_norm = at::linalg_vector_norm(p);
    const torch::Tensor g_norm = at::linalg_vector_norm(g);
    torch::Tensor ratio =
        o.trust_coefficient() * w_norm / (g_norm + w_norm * o.weight_decay() + o.eps());
    ratio = at::where((w_norm > 0).logical_and(g_norm > 0), ratio, at::ones_like(ratio));
    if (o.trust_clip()) {
      ratio = o.lr() > 0.0 ? (ratio / o.lr()).clamp_max(1.0) : at::ones_like(ratio);
    }
    st.trust_ratio().copy_(ratio);
    d = g.add(p, o.weight_decay()).mul_(ratio);
  } else {
    d = o.weight_decay() != 0.0 ? g.add(p, o.weight_decay()) : g;
  }
  const kernels::LarsScalars s = detail::lars_scalars(o, 1.0);
  torch::Tensor u = s.in_scale == 1.0 ? d : d.mul(s.in_scale);
  if (s.momentum != 0.0) {
    torch::Tensor& buf = st.momentum_buffer();
    buf.mul_(s.momentum).add_(u);
    u = s.nesterov ? u.add(buf, s.momentum) : buf;
  }
  p.add_(u, -s.out_scale);
}

// One parameter of the fused CPU path, with everything the parallel loops need as plain values.
struct LarsFusedItem {
  torch::Tensor param;
  torch::Tensor buffer;
  const LarsOptions* options = nullptr;
  LarsParamState* state = nullptr;
  void* w = nullptr;
  const void* g = nullptr;
  void* buf = nullptr;
  bool is_float = true;
  int64_t numel = 0;
  bool adapted = false;
  kernels::LarsScalars scalars;
};

template <class T>
void update_chunk(const LarsFusedItem& it, const detail::Chunk& ch) {
  T* buf = it.buf ? static_cast<T*>(it.buf) + ch.begin : nullptr;
  kernels::lars_update(static_cast<T*>(it.w) + ch.begin, static_cast<const T*>(it.g) + ch.begin,
                       buf, ch.end - ch.begin, it.scalars);
}

template <class T>
void norms_chunk(const LarsFusedItem& it, const detail::Chunk& ch, double* partial) {
  kernels::sum_squares2(static_cast<const T*>(it.w) + ch.begin,
                        static_cast<const T*>(it.g) + ch.begin, ch.end - ch.begin, partial);
}

// Pass 1: ||w||^2 and ||g||^2 of the adapted tensors; then their ratios; pass 2: the update of w
// and buf. Both passes run wave by wave (multi_tensor.h), so pass 2 reads w and g from cache.
void fused_step(std::vector<LarsFusedItem>& items) {
  detail::TwoPassWork work;
  for (const LarsFusedItem& it : items) {
    const int64_t elem = it.is_float ? 4 : 8;
    work.numels.push_back(it.numel);
    work.bytes.push_back(it.numel * elem * (it.buf ? 3 : 2));
    work.in_first.push_back(it.adapted);
    work.in_second.push_back(true);
  }
  work.first = [&](const detail::Chunk& ch, double* partial) {
    const LarsFusedItem& it = items[ch.item];
    it.is_float ? norms_chunk<float>(it, ch, partial) : norms_chunk<double>(it, ch, partial);
  };
  work.between = [&](int64_t i, const double sums[2]) {
    LarsFusedItem& it = items[i];
    const double ratio =
        detail::lars_trust_ratio(*it.options, std::sqrt(sums[0]), std::sqrt(sums[1]));
    *it.state->trust_ratio().data_ptr<double>() = ratio;
    it.scalars = detail::lars_scalars(*it.options, ratio);
  };
  work.second = [&](const detail::Chunk& ch) {
    const LarsFusedItem& it = items[ch.item];
    it.is_float ? update_chunk<float>(it, ch) : update_chunk<double>(it, ch);
  };
  for (LarsFusedItem& it : items) {
    if (!it.adapted) it.scalars = detail::lars_scalars(*it.options, 1.0);
  }
  detail::run_two_pass(work);
  for (const LarsFusedItem& it : items) {
    detail::bump_version(it.param);
    detail::bump_version(it.buffer);
  }
}

}  // namespace

Lars::Lars(std::vector<torch::optim::OptimizerParamGroup> param_groups, LarsOptions defaults)
    // The base takes the groups by const reference: param_groups is still whole below.
    : torch::optim::Optimizer(param_groups, std::make_unique<LarsOptions>(defaults)) {
  keep_group_options(*this, param_groups);
  validate(defaults);
  for (const auto& group : param_groups_)
    validate(static_cast<const LarsOptions&>(group.options()));
}

Lars::Lars(std::vector<torch::Tensor> params, LarsOptions defaults)
    : Lars(std::vector<torch::optim::OptimizerParamGroup>{torch::optim::OptimizerParamGroup(
               std::move(params))},
           std::move(defaults)) {}

const LarsParamState* Lars::param_state(const torch::Tensor& param) const {
  auto it = state_.find(state_key(param));
  return it == state_.end() ? nullptr : static_cast<const LarsParamState*>(it->second.get());
}

at::Tensor Lars::trust_ratio(const at::Tensor& param) const {
  const LarsParamState* st = param_state(param);
  return st != nullptr ? st->trust_ratio() : at::Tensor();
}

torch::Tensor Lars::step(LossClosure closure) {
  torch::Tensor loss;
  if (closure) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  at::NoGradGuard no_grad;
  std::vector<LarsFusedItem> fused;
  std::vector<detail::LarsForeachItem> multi;
  int64_t group_index = -1;
  for (auto& group : param_groups_) {
    ++group_index;
    const auto& o = static_cast<const LarsOptions&>(group.options());
    for (const torch::Tensor& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& slot = state_[state_key(p)];
      if (!slot) slot = std::make_unique<LarsParamState>();
      auto& st = static_cast<LarsParamState&>(*slot);
      if (o.momentum() != 0.0 && !st.momentum_buffer().defined()) {
        st.momentum_buffer(at::zeros_like(p, at::MemoryFormat::Preserve));
      }
      const torch::Tensor& g = p.grad();
      const torch::Tensor& buf = st.momentum_buffer();
      const torch::Tensor& tr = st.trust_ratio();
      const bool fusable =
          o.fused() && !g.is_sparse() &&
          (buf.defined() ? detail::fusable({&p, &g, &buf}) : detail::fusable({&p, &g})) &&
          (!adapted(o) || detail::fusable_trust_ratio(tr));
      if (!fusable && o.foreach () && !g.is_sparse()) {
        multi.push_back({p, g, &st, &o, group_index});  // its trust ratio is made there
        continue;
      }
      if (adapted(o) && !tr.defined()) {
        st.trust_ratio(at::zeros({}, p.options().dtype(at::kDouble)));
      }
      if (!fusable) {
        aten_step(p, st, o);
        continue;
      }
      LarsFusedItem it;
      it.param = p;
      it.buffer = o.momentum() != 0.0 ? buf : torch::Tensor();
      it.options = &o;
      it.state = &st;
      it.is_float = p.scalar_type() == at::kFloat;
      it.w = p.data_ptr();
      it.g = g.data_ptr();
      it.buf = it.buffer.defined() ? it.buffer.data_ptr() : nullptr;
      it.numel = p.numel();
      it.adapted = adapted(o);
      fused.push_back(std::move(it));
    }
  }
  if (!fused.empty()) fused_step(fused);
  detail::lars_foreach_step(multi);
  return loss;
}

void Lars::save(torch::serialize::OutputArchive& archive) const { serialize(*this, archive); }

void Lars::load(torch::serialize::InputArchive& archive) { serialize(*this, archive); }

}  // namespace batchlab::optim
