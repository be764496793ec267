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
// the same bound. Past 2 x the cores of the machine a job runs on, `train` warns before it starts
// (host_rules.h: a rule relative to the machine, so a warning, not a bound).
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
// Sizes that set how much a model or a batch allocates. A bound far above any published run, so
// that a typo (an extra three zeros) is refused at validation with its position instead of
// failing an allocation minutes into a run, or in the middle of a sweep.
// model.width: the small CNNs' base channel count; a 3x3 convolution of width w holds 9 w^2
// weights (151 million at 4096, and later stages are wider).
inline constexpr int64_t kMaxModelWidth = 4096;
// model.num_classes and model.vocab_size: the head and the embedding hold hidden x N weights; the
// largest label sets and vocabularies in use are about 10^6.
inline constexpr int64_t kMaxClasses = 10'000'000;
// model.max_seq_len, data.seq_len and data.seq_len_phase2: position embeddings of max_seq_len x
// hidden and attention scores of seq_len^2 per head; 2^20 tokens is far past any BERT-style run.
inline constexpr int64_t kMaxSeqLen = 1 << 20;
// data.image_size and data.eval_resize, in pixels: an image of side s is 3 s^2 values in a batch.
inline constexpr int64_t kMaxImageSize = 8192;
// batch.global, batch.micro and batch.bn_group: the largest published batches are 64k (LAMB) to
// about a million examples; 2^23 also keeps steps x batch (at most kMaxSteps x 2^23) in 64 bits.
inline constexpr int64_t kMaxBatch = 1 << 23;
// The largest float32 (std::numeric_limits<float>::max()): the optimizers apply the learning rate
// and the weight decay to float32 parameters as scalars LibTorch range-checks, so a larger value
// fails the run at its first update instead of being refused here (learning_rate.h).
inline constexpr double kMaxFloat32 = 3.4028234663852886e38;
// sweep.name: it names the sweep's database (NAME.db and SQLite's NAME.db-journal, -wal, -shm)
// and its runs folder; a file name holds at most 255 bytes on Linux file systems.
inline constexpr int64_t kMaxSweepNameLength = 100;

}  // namespace batchlab::config
