// [batch]: the logical and physical batch (experiment_config.h describes the config structs as a
// whole).
#pragma once

#include <cstdint>

namespace batchlab::config {

struct BatchConfig {
  int64_t global = 0;    // the swept batch size: world x micro x accumulation
  int64_t micro = 0;     // per device per forward; 0 = global / world (no accumulation)
  int64_t bn_group = 0;  // ghost batch-norm group; 0 = whole micro-batch
};

}  // namespace batchlab::config
