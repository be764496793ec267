// Keeping the ranks of a data-parallel run identical where the gradient all-reduce does not: the
// model's starting point, its buffers (batch-norm running statistics, which each rank updates
// from its own examples) and the step a resumed run continues from.
#pragma once

#include <torch/nn/module.h>

#include <cstdint>
#include <string>

#include "core/train/data_parallel.h"

namespace batchlab::train {

// Parameters and buffers of `model` take rank 0's values.
void broadcast_model(torch::nn::Module& model, DataParallel& dp);

// Floating-point buffers become their mean over the ranks (integer ones, such as batch norm's
// update counter, are equal on every rank already).
void average_buffers(torch::nn::Module& model, DataParallel& dp);

// Throws CheckpointError listing every rank's step unless all ranks are at `step`, e.g. when a
// rank on another host could not read the checkpoint directory `checkpoint_dir`.
void check_same_step(DataParallel& dp, int64_t step, const std::string& checkpoint_dir);

}  // namespace batchlab::train
