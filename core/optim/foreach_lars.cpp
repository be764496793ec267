#include "core/optim/foreach_lars.h"

#include <ATen/ATen.h>

#include "core/optim/foreach_common.h"

namespace batchlab::optim::detail {
namespace {

bool adapted(const LarsOptions& o) { return o.adapt() || o.always_adapt(); }

struct LarsBucket {
  const LarsOptions* options = nullptr;
  std::vector<size_t> members;  // indices into the items
  std::vector<at::Tensor> params;
  std::vector<at::Tensor> grads;
  std::vector<at::Tensor> buffers;  // empty without momentum
};

std::vector<BucketKey> keys_of(const std::vector<LarsForeachItem>& items) {
  std::vector<BucketKey> keys;
  keys.reserve(items.size());
  for (const LarsForeachItem& it : items) {
    const at::Tensor& buf = it.state->momentum_buffer();
    keys.push_back({it.group,
                    it.param.device(),
                    {it.param.scalar_type(), it.grad.scalar_type(),
                     buf.defined() ? buf.scalar_type() : at::ScalarType::Undefined}});
  }
  return keys;
}

// D from the gradients (ratios: one per tensor, or empty for a non-adapted bucket), then the
// momentum and the update of the parameters.
void update(const LarsBucket& b, const std::vector<double>& ratios) {
  const LarsOptions& o = *b.options;
  const kernels::LarsScalars s = lars_scalars(o, 1.0);
  std::vector<at::Tensor> d;
  if (!ratios.empty()) {
    const std::vector<at::Scalar> r(ratios.begin(), ratios.end());
    if (s.weight_decay != 0.0) {
      d = at::_foreach_add(b.grads, b.params, s.weight_decay);
      at::_foreach_mul_(d, r);
    } else {
      d = at::_foreach_mul(b.grads, r);
    }
  } else {
    d = s.weight_decay != 0.0 ? at::_foreach_add(b.grads, b.params, s.weight_decay) : b.grads;
  }
  if (s.in_scale != 1.0) d = at::_foreach_mul(d, s.in_scale);  // never in place: d may be G
  std::vector<at::Tensor> u = d;
  if (!b.buffers.empty()) {
    at::_foreach_mul_(b.buffers, s.momentum);
    at::_foreach_add_(b.buffers, d);
    u = s.nesterov ? at::_foreach_add(d, b.buffers, s.momentum) : b.buffers;
  }
  at::_foreach_add_(b.params, u, -s.out_scale);
}

}  // namespace

void lars_foreach_step(const std::vector<LarsForeachItem>& items) {
  if (items.empty()) return;
  std::vector<LarsBucket> adapted_buckets;
  std::vector<std::vector<at::Tensor>> w_norms;
  std::vector<std::vector<at::Tensor>> g_norms;
  for (const std::vector<size_t>& members : bucket_indices(keys_of(items))) {
    LarsBucket b;
    b.options = items[members.front()].options;
    b.members = members;
    for (size_t i : members) {
      b.params.push_back(items[i].param);
      b.grads.push_back(items[i].grad);
      if (items[i].state->momentum_buffer().defined()) {
        b.buffers.push_back(items[i].state->momentum_buffer());
      }
    }
    if (!adapted(*b.options)) {
      update(b, {});
      continue;
    }
    w_norms.push_back(foreach_norm(b.params));
    g_norms.push_back(foreach_norm(b.grads));
    adapted_buckets.push_back(std::move(b));
  }
  if (adapted_buckets.empty()) return;
  // The step's one host read: every adapted tensor's ||w|| and ||g||.
  const auto norms = read_norm_pairs(w_norms, g_norms);
  for (size_t k = 0; k < adapted_buckets.size(); ++k) {
    const LarsBucket& b = adapted_buckets[k];
    std::vector<double> ratios;
    for (size_t j = 0; j < b.members.size(); ++j) {
      const double ratio = lars_trust_ratio(*b.options, norms[k][j][0], norms[k][j][1]);
      LarsParamState& st = *items[b.members[j]].state;
      if (!st.trust_ratio().defined() || !st.trust_ratio().device().is_cpu() ||
          st.trust_ratio().scalar_type() != at::kDouble) {
        st.trust_ratio(at::zeros({}, at::TensorOptions().dtype(at::kDouble)));
      }
      *st.trust_ratio().data_ptr<double>() = ratio;
      ratios.push_back(ratio);
    }
    update(b, ratios);
  }
}

}  // namespace batchlab::optim::detail
