#include "core/train/data_order.h"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

namespace batchlab::train {

uint64_t mix_seed(uint64_t a, uint64_t b) {
  uint64_t z = a * 0x9E3779B97F4A7C15ULL + b + 0x632BE59BD9B4E019ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

namespace {
torch::Tensor seeded_permutation(uint64_t seed, int64_t n) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  return torch::randperm(n, gen, torch::TensorOptions().dtype(torch::kInt64));
}
}  // namespace

torch::Tensor epoch_permutation(int64_t data_seed, int64_t epoch, int64_t n) {
  return seeded_permutation(
      mix_seed(static_cast<uint64_t>(data_seed), static_cast<uint64_t>(epoch)), n);
}

torch::Tensor fixed_train_sample(int64_t data_seed, int64_t n, int64_t count) {
  // A stream of its own (not epoch 0's order), so the sample is not the first batches trained on.
  auto perm = seeded_permutation(mix_seed(static_cast<uint64_t>(data_seed), 0xE7A1ULL << 32), n);
  return std::get<0>(perm.slice(0, 0, std::min(count, n)).sort());
}

torch::Tensor micro_batch_indices(const torch::Tensor& permutation, const BatchGeometry& g,
                                  int64_t step_in_epoch, int64_t rank, int64_t micro_index) {
  return micro_batch_at(permutation, g, step_in_epoch * g.global, rank, micro_index);
}

torch::Tensor micro_batch_at(const torch::Tensor& permutation, const BatchGeometry& g,
                             int64_t offset, int64_t rank, int64_t micro_index) {
  const int64_t start = offset + (micro_index * g.world + rank) * g.micro;
  return permutation.slice(0, start, start + g.micro);
}

}  // namespace batchlab::train
