#include "core/train/rank_sync.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include "core/errors.h"

namespace batchlab::train {

void broadcast_model(torch::nn::Module& model, DataParallel& dp) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> tensors;
  for (const auto& p : model.parameters()) tensors.push_back(p);
  for (const auto& b : model.buffers()) tensors.push_back(b);
  dp.broadcast_from_rank0(tensors);
}

void average_buffers(torch::nn::Module& model, DataParallel& dp) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> floats;
  for (auto& b : model.buffers()) {
    if (b.is_floating_point()) floats.push_back(b);
  }
  if (floats.empty()) return;
  // float64 [total]: all of them in one collective.
  std::vector<torch::Tensor> flat;
  for (const auto& b : floats)
    flat.push_back(b.detach().to(torch::kCPU, torch::kFloat64).reshape({-1}));
  auto mean = dp.all_reduce_sum(torch::cat(flat)) / static_cast<double>(dp.world_size());
  int64_t offset = 0;
  for (auto& b : floats) {
    const int64_t n = b.numel();
    b.copy_(mean.slice(0, offset, offset + n).view(b.sizes()));
    offset += n;
  }
}

void check_same_step(DataParallel& dp, int64_t step, const std::string& checkpoint_dir) {
  // float64 [world]: each rank fills its own slot, so the sum is everyone's step.
  std::vector<double> steps(static_cast<size_t>(dp.world_size()), 0.0);
  steps[static_cast<size_t>(dp.rank())] = static_cast<double>(step);
  auto all = dp.all_reduce_sum(torch::tensor(steps, torch::kFloat64));
  std::string listing;
  bool same = true;
  for (int64_t r = 0; r < all.size(0); ++r) {
    const auto s = static_cast<int64_t>(all[r].item<double>());
    same = same && s == step;
    listing += fmt::format("{}rank {} at step {}", r ? ", " : "", r, s);
  }
  if (!same) {
    throw CheckpointError(fmt::format(
        "the ranks resumed from different checkpoints ({}); every rank must see the checkpoint "
        "directory {} (on several hosts: a shared filesystem)",
        listing, checkpoint_dir.empty() ? std::string("(none)") : checkpoint_dir));
  }
}

}  // namespace batchlab::train
