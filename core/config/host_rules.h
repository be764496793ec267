// Rules relative to the machine a job runs on. Validation proper gives the same answer on every
// machine (limits.h: a login node checks what a compute node runs, and a run id must not depend
// on where it was computed), so these rules warn and never refuse: the same configuration may be
// right on the machine it is meant for.
//
// train.threads past kThreadsPerCore x the cores of this machine (counting every process of the
// job on it, train --nproc or LOCAL_WORLD_SIZE): LibTorch starts one OS thread per intra-op
// thread, so past the cores they only take turns, and every step slows down (train.threads = 1000
// on 2 cores took 30 s for one step at a load average of 252). train.threads = 0 takes the cores
// as they are and never warns.
#pragma once

#include <cstdint>
#include <vector>

#include "core/config/bench_config.h"
#include "core/config/experiment_config.h"
#include "core/errors.h"

namespace batchlab::config {

// A little oversubscription is harmless (a thread blocked on memory or I/O leaves its core to
// another); twice the cores is where the waiting dominates.
inline constexpr int64_t kThreadsPerCore = 2;

// The machine a job is about to run on: its cores (hardware threads, 0 = unknown: no warning) and
// the processes of the job that share them.
struct Host {
  int64_t cores = 0;
  int64_t processes = 1;
};

// Warnings for `config` on `host`, as diagnostics keyed by full path (unlocated).
std::vector<Diagnostic> host_warnings(const ExperimentConfig& config, const Host& host);

// The same rule for `batchlab bench --threads N` (one process), keyed "--threads": a throughput
// measured with the threads taking turns on the cores measures the oversubscription.
std::vector<Diagnostic> bench_host_warnings(const BenchConfig& bench, const Host& host);

}  // namespace batchlab::config
