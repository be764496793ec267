// Evaluation in eval mode without gradients, over a set of examples in fixed-size chunks.
#pragma once

#include <cstdint>

#include "core/train/autocast.h"
#include "core/train/data_parallel.h"
#include "core/train/task.h"

namespace batchlab::train {

struct EvalMetrics {
  double loss = 0.0;      // mean over all items
  double accuracy = 0.0;  // correct / items
  int64_t items = 0;
};

// Evaluates `indices` (int64 [n]) of `split`; restores the model's previous train/eval mode.
// Forward passes run under `precision`'s autocast, as in training.
EvalMetrics evaluate(Task& task, Split split, const torch::Tensor& indices, int64_t chunk,
                     const MixedPrecision& precision = {});

// Data parallel: rank r evaluates the r-th of `world` contiguous shards of `indices` and the
// ranks' sums of loss, correct predictions and items are added up, so every rank gets the metrics
// of all of `indices` (the same numbers, to rounding, as one process evaluating them all) in
// 1/world of the time. With `dp` null this is evaluate().
EvalMetrics evaluate_sharded(Task& task, Split split, const torch::Tensor& indices, int64_t chunk,
                             const MixedPrecision& precision, DataParallel* dp);

// The whole split.
EvalMetrics evaluate_split(Task& task, Split split, int64_t chunk,
                           const MixedPrecision& precision = {});

}  // namespace batchlab::train
