// Exact data accounting. The sample order of an epoch depends only on (data seed, epoch), so every
// batch size and every number of processes walks the same order; a global batch is a contiguous
// slice of it, split into per-rank, per-micro-batch slices. The incomplete last batch is dropped.
#pragma once

#include <torch/types.h>

#include <cstdint>

#include "core/config/batch_geometry.h"

namespace batchlab::train {

// 64-bit mixing (SplitMix64 finalizer): decorrelates seeds that differ in one bit.
uint64_t mix_seed(uint64_t a, uint64_t b);

// int64 [n]: the order in which epoch `epoch` visits the n training examples.
torch::Tensor epoch_permutation(int64_t data_seed, int64_t epoch, int64_t n);

// int64 [min(count, n)]: a fixed sample of the training set (the same for every epoch and batch
// size), measured in eval mode to compare train and test metrics like with like.
torch::Tensor fixed_train_sample(int64_t data_seed, int64_t n, int64_t count);

// The batch geometry is config's one rule (core/config/batch_geometry.h): global = world x micro x
// accum, steps per epoch and the samples an epoch drops.
using config::BatchGeometry;
using config::make_batch_geometry;

// int64 [micro]: the examples of micro-batch `micro_index` of `rank` in update `step_in_epoch`.
// Micro-batch j of rank r is the slice [(j * world + r) * micro, + micro) of the global batch, so
// the ranks' j-th micro-batches together are exactly the single-process j-th micro-batch of
// world x micro examples: 2 ranks x micro b see the same groups (ghost batch norm included) as one
// process x micro 2b. With one process this is the plain order [j * micro, (j + 1) * micro).
torch::Tensor micro_batch_indices(const torch::Tensor& permutation, const BatchGeometry& g,
                                  int64_t step_in_epoch, int64_t rank, int64_t micro_index);

// The same for a global batch that starts at example `offset` of the epoch's order rather than at
// a multiple of its size: under a batch schedule (config/batch_phases.h) a phase may start in the
// middle of an epoch. micro_batch_indices(p, g, s, r, j) = micro_batch_at(p, g, s x g.global, r,
// j).
torch::Tensor micro_batch_at(const torch::Tensor& permutation, const BatchGeometry& g,
                             int64_t offset, int64_t rank, int64_t micro_index);

}  // namespace batchlab::train
