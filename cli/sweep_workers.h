// How many jobs `batchlab sweep run` runs at once when --workers is not given, and why: the user
// sees the reason next to the number ("2 workers: 2 cores / train.threads = 1").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "sweeps/expand.h"

namespace batchlab::cli {

struct WorkerChoice {
  unsigned workers = 1;
  std::string reason;  // "2 cores / train.threads = 1", "as asked (--workers)", ...

  // "2 workers: 2 cores / train.threads = 1"
  std::string describe() const;
};

// --workers when given (`asked`, already checked >= 1); else one worker per listed device; else as
// many jobs as `cores` hold at the jobs' train.threads (the largest of the plan's jobs; 0 means all
// cores, as in `batchlab train`), at least 1.
WorkerChoice choose_workers(std::optional<long long> asked, const sweeps::Plan& plan,
                            size_t devices, int64_t cores);

// The machine's cores as the jobs' threads see them (at least 1).
int64_t hardware_cores();

}  // namespace batchlab::cli
