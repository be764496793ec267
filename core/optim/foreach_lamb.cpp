#include "core/optim/foreach_lamb.h"

#include <ATen/ATen.h>

#include <cmath>

#include "core/optim/foreach_common.h"

namespace batchlab::optim::detail {
namespace {

bool adapted(const LambOptions& o) { return o.adapt() || o.always_adapt(); }

// One bucket's lists and what the second half of its update needs.
struct LambBucket {
  const LambOptions* options = nullptr;
  std::vector<size_t> members;  // indices into the items
  std::vector<at::Tensor> params;
  std::vector<at::Tensor> updates;  // R, float lists like the parameters
};

std::vector<BucketKey> keys_of(const std::vector<LambForeachItem>& items) {
  std::vector<BucketKey> keys;
  keys.reserve(items.size());
  for (const LambForeachItem& it : items) {
    keys.push_back({it.group,
                    it.param.device(),
                    {it.param.scalar_type(), it.grad.scalar_type(),
                     it.state->exp_avg().scalar_type(), it.state->exp_avg_sq().scalar_type()}});
  }
  return keys;
}

// Everything up to R (+ wd * P): moments updated in place, R returned.
std::vector<at::Tensor> moments_and_update(const std::vector<LambForeachItem>& items,
                                           const std::vector<size_t>& members,
                                           const ClipFactor& clip,
                                           std::vector<at::Tensor>& params) {
  const LambOptions& o = *items[members.front()].options;
  std::vector<at::Tensor> grads;
  std::vector<at::Tensor> m;
  std::vector<at::Tensor> v;
  std::vector<at::Scalar> inv_bc1;
  std::vector<at::Scalar> inv_sqrt_bc2;
  for (size_t i : members) {
    const LambForeachItem& it = items[i];
    params.push_back(it.param);
    grads.push_back(it.grad);
    m.push_back(it.state->exp_avg());
    v.push_back(it.state->exp_avg_sq());
    const kernels::LambScalars s = lamb_scalars(o, it.state->step(), 1.0);
    inv_bc1.emplace_back(s.inv_bc1);
    inv_sqrt_bc2.emplace_back(s.inv_sqrt_bc2);
  }
  const kernels::LambScalars s = lamb_scalars(o, 1, 1.0);  // the step-independent scalars
  // Clipping: a host factor of 1 changes nothing; a device factor is applied as it is (reading it
  // to decide would be a host read).
  std::vector<at::Tensor> g = grads;
  if (clip.host) {
    if (*clip.host != 1.0) g = at::_foreach_mul(grads, 1.0 / *clip.host);
  } else if (clip.tensor.defined()) {
    g = at::_foreach_mul(grads, clip.tensor.reciprocal().to(grads.front().scalar_type()));
  }
  at::_foreach_mul_(m, s.beta1);
  at::_foreach_add_(m, g, s.beta3);
  at::_foreach_mul_(v, s.beta2);
  at::_foreach_addcmul_(v, g, g, 1.0 - s.beta2);
  std::vector<at::Tensor> denom = at::_foreach_sqrt(v);
  at::_foreach_mul_(denom, inv_sqrt_bc2);
  at::_foreach_add_(denom, s.eps);
  std::vector<at::Tensor> r = at::_foreach_mul(m, inv_bc1);
  at::_foreach_div_(r, denom);
  if (s.weight_decay != 0.0) at::_foreach_add_(r, params, s.weight_decay);
  return r;
}

}  // namespace

void lamb_foreach_step(const std::vector<LambForeachItem>& items, const ClipFactor& clip) {
  if (items.empty()) return;
  std::vector<LambBucket> adapted_buckets;
  std::vector<std::vector<at::Tensor>> w_norms;
  std::vector<std::vector<at::Tensor>> r_norms;
  for (const std::vector<size_t>& members : bucket_indices(keys_of(items))) {
    LambBucket b;
    b.options = items[members.front()].options;
    b.members = members;
    b.updates = moments_and_update(items, members, clip, b.params);
    if (!adapted(*b.options)) {
      at::_foreach_add_(b.params, b.updates, -b.options->lr());
      continue;
    }
    w_norms.push_back(foreach_norm(b.params));
    r_norms.push_back(foreach_norm(b.updates));
    adapted_buckets.push_back(std::move(b));
  }
  if (adapted_buckets.empty()) return;
  // The step's one host read: every adapted tensor's ||w|| and ||r||.
  const auto norms = read_norm_pairs(w_norms, r_norms);
  for (size_t k = 0; k < adapted_buckets.size(); ++k) {
    LambBucket& b = adapted_buckets[k];
    std::vector<at::Scalar> step_sizes;
    for (size_t j = 0; j < b.members.size(); ++j) {
      const double ratio = lamb_trust_ratio(*b.options, norms[k][j][0], norms[k][j][1]);
      LambParamState& st = *items[b.members[j]].state;
      if (!st.trust_ratio().defined() || !st.trust_ratio().device().is_cpu() ||
          st.trust_ratio().scalar_type() != at::kDouble) {
        st.trust_ratio(at::zeros({}, at::TensorOptions().dtype(at::kDouble)));
      }
      *st.trust_ratio().data_ptr<double>() = ratio;
      step_sizes.emplace_back(-b.options->lr() * ratio);
    }
    at::_foreach_mul_(b.updates, step_sizes);
    at::_foreach_add_(b.params, b.updates);
  }
}

}  // namespace batchlab::optim::detail
