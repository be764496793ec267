// [batch]: the logical and physical batch, and the batch-size schedule (experiment_config.h
// describes the config structs as a whole; batch_schedule.h the schedule's keys and rules).
#pragma once

#include <cstdint>
#include <vector>

namespace batchlab::config {

// One point of a batch-size schedule: from `examples` seen on, the global batch is `global`.
struct BatchPoint {
  int64_t examples = 0;
  int64_t global = 0;
  bool operator==(const BatchPoint&) const = default;
};

struct BatchConfig {
  // The swept batch size: world x micro x accumulation. With a batch schedule, the batch the run
  // ends at (the largest); derived from the last point of batch.schedule when absent.
  int64_t global = 0;
  int64_t micro = 0;     // per device per forward; 0 = global / world (no accumulation)
  int64_t bn_group = 0;  // ghost batch-norm group; 0 = whole micro-batch
  // Batch-size warmup (batch_schedule.h), at most one of the two forms; both off = a fixed batch.
  // An explicit schedule: [[examples, global], ...], first point at 0, both columns increasing,
  // the last batch = batch.global.
  std::vector<BatchPoint> schedule;
  // A doubling ramp: the batch starts at ramp_start and doubles every ramp_double_every examples
  // until it reaches batch.global (the last doubling capped there). 0 = off.
  int64_t ramp_start = 0;
  int64_t ramp_double_every = 0;
};

}  // namespace batchlab::config
