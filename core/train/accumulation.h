// Gradient accumulation: one global batch as `accum` micro-batches whose mean losses are each
// divided by `accum` before backward, so the summed gradient equals that of one pass over the
// whole batch (DESIGN.md "Large-batch mechanics").
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/optim/factory.h"
#include "core/train/autocast.h"
#include "core/train/task.h"

namespace batchlab::train {

// Result of one accumulated global batch.
struct AccumulatedStep {
  double loss = 0.0;        // mean training loss over the batch (read only without hooks)
  torch::Tensor mean_loss;  // float64 0-dim on the device: the same, not yet read by the host
  int64_t items = 0;
};

// What the trainer adds around the micro-batches.
struct AccumulationHooks {
  MixedPrecision precision;  // autocast for the forward passes (backward runs outside it)
  // Called right before the last micro-batch's backward (data parallelism arms its gradient
  // all-reduce there: those gradients are the final ones).
  std::function<void()> before_last_backward;
  // Called around the noise-scale measurement (the copy of the running gradient sum before each
  // micro-batch's backward, the difference's norm after it, the host read at the end), so the
  // trainer can keep it off the training clock: it is measurement, not training.
  std::function<void()> measure_begin;
  std::function<void()> measure_end;
};

// Runs forward/backward over the micro-batches (each loss / micro_indices.size()) and leaves the
// accumulated gradient in the parameters' .grad. Gradients are not zeroed here. With
// `micro_sq_norms`, also measures the squared norm of each micro-batch's own gradient (the
// difference of the running sum across its backward, times k) without disturbing the sum: one
// extra copy and one extra pass per micro-batch, for the gradient noise scale. Without `hooks`
// the loss is read to the host (`loss`); with them it is left on the device (`mean_loss`) for the
// caller to read together with its other metrics: one host synchronization per step.
AccumulatedStep accumulate_gradients(Task& task, const std::vector<torch::Tensor>& micro_indices,
                                     std::optional<uint64_t> augment_seed,
                                     const std::vector<optim::NamedParameter>* params = nullptr,
                                     std::vector<double>* micro_sq_norms = nullptr,
                                     const AccumulationHooks* hooks = nullptr);

}  // namespace batchlab::train
