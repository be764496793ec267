#include "core/train/data_order.h"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include "core/config/preconditions.h"
#include "core/errors.h"

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

BatchGeometry make_batch_geometry(int64_t global, int64_t micro, int64_t world,
                                  int64_t train_size) {
  BatchGeometry g;
  g.global = global;
  g.world = world;
  g.micro = micro > 0 ? micro : global / world;
  g.accum = global / (world * g.micro);
  // config::validate_batch_geometry checked this for the run's world size when the config was read.
  config::expect(g.accum * world * g.micro == global, "make_batch_geometry",
                 fmt::format("batch.global = {} is not world_size ({}) x micro ({}) x a whole "
                             "accumulation count",
                             global, world, g.micro));
  g.steps_per_epoch = train_size / global;
  g.dropped_per_epoch = train_size - g.steps_per_epoch * global;
  if (g.steps_per_epoch == 0) {
    throw InputError(fmt::format(
        "batch.global = {} is larger than the training set ({} examples): no full batch per epoch; "
        "lower batch.global or use more data (data.train_size)",
        global, train_size));
  }
  return g;
}

torch::Tensor micro_batch_indices(const torch::Tensor& permutation, const BatchGeometry& g,
                                  int64_t step_in_epoch, int64_t rank, int64_t micro_index) {
  const int64_t start = step_in_epoch * g.global + (micro_index * g.world + rank) * g.micro;
  return permutation.slice(0, start, start + g.micro);
}

}  // namespace batchlab::train
