#include "core/dist/gradient_buckets.h"

#include <fmt/format.h>
#include <torch/torch.h>

namespace batchlab::dist {

GradientBuckets::GradientBuckets(ProcessGroup& group, std::vector<torch::Tensor> params,
                                 double bucket_mb)
    : group_(group), params_(std::move(params)), slots_(params_.size()) {
  const auto cap = static_cast<int64_t>(bucket_mb * 1024.0 * 1024.0);
  int64_t bytes = 0;
  for (size_t k = params_.size(); k-- > 0;) {
    const auto& p = params_[k];
    if (!p.requires_grad() || p.numel() == 0) continue;
    const int64_t size = p.numel() * static_cast<int64_t>(p.element_size());
    bool open_new = buckets_.empty();
    if (!open_new) {
      const auto& first = params_[buckets_.back().members.front()];
      open_new =
          first.scalar_type() != p.scalar_type() || first.device() != p.device() || bytes >= cap;
    }
    if (open_new) {
      buckets_.emplace_back();
      bytes = 0;
    }
    auto& b = buckets_.back();
    slots_[k].bucket = buckets_.size() - 1;
    slots_[k].numel = p.numel();
    b.members.push_back(k);
    bytes += size;
  }
  for (auto& b : buckets_) {
    int64_t offset = 0;
    for (size_t k : b.members) {
      slots_[k].offset = offset;
      offset += slots_[k].numel;
    }
    const auto& first = params_[b.members.front()];
    b.flat = torch::empty({offset}, first.options().requires_grad(false));
  }
  for (size_t k = 0; k < params_.size(); ++k) {
    if (!params_[k].requires_grad() || params_[k].numel() == 0) continue;
    slots_[k].hook =
        params_[k].register_hook([this, k](const torch::Tensor& grad) { on_gradient(k, grad); });
    slots_[k].hooked = true;
  }
}

GradientBuckets::~GradientBuckets() {
  for (size_t k = 0; k < params_.size(); ++k) {
    if (slots_[k].hooked) params_[k].remove_hook(slots_[k].hook);
  }
}

std::vector<std::vector<size_t>> GradientBuckets::layout() const {
  std::vector<std::vector<size_t>> out;
  for (const auto& b : buckets_) out.push_back(b.members);
  return out;
}

void GradientBuckets::arm(bool measure_local_norm) {
  measure_ = measure_local_norm;
  next_launch_ = 0;
  local_sq_.clear();
  for (auto& b : buckets_) b.waiting = static_cast<int64_t>(b.members.size());
  for (auto& s : slots_) s.filled = false;
  armed_ = true;
}

void GradientBuckets::on_gradient(size_t index, const torch::Tensor& grad) {
  if (!armed_ || slots_[index].filled) return;
  fill(index, &grad);
  launch_ready();
}

// Writes parameter `index`'s final accumulated gradient into its bucket: .grad (earlier
// micro-batches) + `fresh` (this backward's contribution, not yet added by autograd).
void GradientBuckets::fill(size_t index, const torch::Tensor* fresh) {
  torch::NoGradGuard no_grad;
  auto& slot = slots_[index];
  auto& bucket = buckets_[slot.bucket];
  auto dst = bucket.flat.slice(0, slot.offset, slot.offset + slot.numel);
  const auto& accumulated = params_[index].grad();
  if (fresh && accumulated.defined()) {
    torch::add_out(dst, accumulated.reshape({-1}), fresh->reshape({-1}));
  } else if (fresh) {
    dst.copy_(fresh->reshape({-1}));
  } else if (accumulated.defined()) {
    dst.copy_(accumulated.reshape({-1}));
  } else {
    dst.zero_();  // no gradient on this rank this step
  }
  slot.filled = true;
  --bucket.waiting;
}

void GradientBuckets::launch_ready() {
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].waiting == 0) {
    auto& b = buckets_[next_launch_];
    if (measure_) local_sq_.push_back(b.flat.pow(2).sum(torch::kFloat64));
    b.comm = b.flat.device() == group_.device() ? b.flat : b.flat.to(group_.device());
    b.pending = group_.all_reduce_sum(b.comm, fmt::format("all-reduce of gradient bucket {} of {}",
                                                          next_launch_ + 1, buckets_.size()));
    ++next_launch_;
  }
}

torch::Tensor GradientBuckets::finish() {
  armed_ = false;
  // Parameters whose hook did not fire in this backward (unused by this step's graph).
  for (size_t k = 0; k < params_.size(); ++k) {
    if (slots_[k].hooked && !slots_[k].filled) fill(k, nullptr);
  }
  launch_ready();
  torch::NoGradGuard no_grad;
  const auto world = static_cast<double>(group_.world_size());
  for (auto& b : buckets_) {
    b.pending->wait();
    b.pending.reset();
    if (!b.comm.is_same(b.flat)) b.flat.copy_(b.comm);
    b.flat.div_(world);  // sum -> mean (after the sum, as one process would add then divide)
    for (size_t k : b.members) {
      const auto& s = slots_[k];
      auto& p = params_[k];
      auto mean = b.flat.slice(0, s.offset, s.offset + s.numel).view(p.sizes());
      if (p.grad().defined()) {
        p.mutable_grad().copy_(mean);
      } else {
        p.mutable_grad() = mean.clone();
      }
    }
  }
  if (!measure_ || local_sq_.empty()) return {};
  return torch::stack(local_sq_).sum();
}

}  // namespace batchlab::dist
