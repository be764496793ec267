// Upper bounds on what a configuration may ask for where a number allocates (threads, loader
// workers, queued batches, samples), drives arithmetic on derived keys (steps, epochs), or becomes
// a file name (sweep.name). Each bound is absolute rather than relative to this machine: validation
// must give the same answer wherever a config or a sweep plan is checked (a login node and the
// compute node that runs the job differ), just as the run id does.
#pragma once

#include <cstdint>

namespace batchlab::config {

// train.threads, `batchlab bench --threads`: LibTorch starts one OS thread per intra-op thread.
// The largest single hosts have 384-768 hardware threads; `batchlab data tokenizer --threads` has
// the same bound.
inline constexpr int64_t kMaxThreads = 1024;
// data.workers (loader threads) and data.prefetch (batches each queues ahead, all in memory).
inline constexpr int64_t kMaxWorkers = 256;
inline constexpr int64_t kMaxPrefetch = 64;
// Examples in a split (data.train_size, test_size, val_size, eval_train_samples) and samples a
// study trial may see ([study] max_samples): 10^12, thousands of times the largest published
// large-batch runs (ResNet-50 for 90 epochs sees 1.2e8 images), and small enough that steps x
// batch and epochs x steps per epoch stay far inside 64 bits.
inline constexpr int64_t kMaxSamples = 1'000'000'000'000;
// schedule.steps, schedule.warmup_steps, [study] max_steps.
inline constexpr int64_t kMaxSteps = 1'000'000'000'000;
// schedule.epochs, schedule.warmup_epochs and the milestones (epochs): epochs x steps per epoch
// (at most kMaxSamples) stays below 2^63.
inline constexpr double kMaxEpochs = 1'000'000;
// sweep.name: it names the sweep's database (NAME.db and SQLite's NAME.db-journal, -wal, -shm)
// and its runs folder; a file name holds at most 255 bytes on Linux file systems.
inline constexpr int64_t kMaxSweepNameLength = 100;

}  // namespace batchlab::config
