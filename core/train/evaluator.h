// Evaluation in eval mode without gradients, over a set of examples in fixed-size chunks.
#pragma once

#include <cstdint>

#include "core/train/task.h"

namespace batchlab::train {

struct EvalMetrics {
  double loss = 0.0;      // mean over all items
  double accuracy = 0.0;  // correct / items
  int64_t items = 0;
};

// Evaluates `indices` (int64 [n]) of `split`; restores the model's previous train/eval mode.
EvalMetrics evaluate(Task& task, Split split, const torch::Tensor& indices, int64_t chunk);

// The whole split.
EvalMetrics evaluate_split(Task& task, Split split, int64_t chunk);

}  // namespace batchlab::train
