// Builds uint8 image batches from an ImageSource on worker threads, with a bounded queue of
// training batches built ahead of time.
//
// Threads: `workers` loader threads share one FIFO of per-sample work items; with workers = 0
// every batch is built on the calling (training) thread. A batch asked for and not prefetched is
// put at the head of the queue and the caller waits for it.
//
// Prefetch: plan() receives the order the trainer will read the training split in (a BatchPlan:
// data seed, batch geometry, first step); the loader keeps the next `prefetch` micro-batches of
// that order queued. load() hands out a prefetched batch only when its indices and seed equal the
// request, so prefetching never changes what a step sees. The test and validation splits are also
// read ahead by one chunk when evaluation walks them in consecutive chunks (evaluate_split's
// pattern).
//
// Determinism: a sample depends only on (split, index, augment seed, position in the batch), never
// on the thread that builds it or the number of workers.
//
// Unreadable images: with skip_corrupt = false the DataError naming the file reaches the caller of
// load() for the batch that contains it. With skip_corrupt = true the sample is replaced by the
// next readable one of the split (index + 1, + 2, ...; same augmentation seed, the replacement's
// label), the first failures are printed to stderr with their path, and every distinct unreadable
// sample is counted (skipped_count(), skipped_messages()).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/train/task.h"
#include "experiments/data/image_source.h"

namespace batchlab::data {

struct LoaderOptions {
  int64_t workers = 0;   // loader threads; 0 = build on the calling thread
  int64_t prefetch = 4;  // training micro-batches kept queued ahead
  bool skip_corrupt = false;
  bool augment = true;      // training requests with a seed get the random transform; else eval's
  bool pin_memory = false;  // batches in page-locked memory (CUDA builds, for async copies)
};

struct ImageBatch {
  torch::Tensor images;  // uint8 [B, 3, S, S]
  torch::Tensor labels;  // int64 [B]
};

class BatchLoader {
 public:
  BatchLoader(std::shared_ptr<const ImageSource> source, TransformSpec spec, LoaderOptions options);
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // The samples at `indices` (int64 [B]) of `split`; with a seed (and augment) the training
  // transform, otherwise the eval transform. Call from one thread (the training thread).
  ImageBatch load(Split split, const torch::Tensor& indices, std::optional<uint64_t> seed);

  // Starts (or restarts, after a resume) reading ahead in the trainer's order.
  void plan(const train::BatchPlan& plan);

  // Distinct unreadable samples met so far (skip_corrupt), and their messages (path and reason).
  int64_t skipped_count() const;
  std::vector<std::string> skipped_messages() const;
  // Requests served from a prefetched batch / built on demand (training requests with a seed).
  int64_t prefetch_hits() const { return hits_; }
  int64_t prefetch_misses() const { return misses_; }

  const ImageSource& source() const { return *source_; }
  const TransformSpec& spec() const { return spec_; }

 private:
  struct Job;
  struct Worker;

  std::shared_ptr<Job> make_job(Split split, const torch::Tensor& indices,
                                std::optional<uint64_t> seed) const;
  void enqueue(const std::shared_ptr<Job>& job, bool urgent);
  ImageBatch wait(const std::shared_ptr<Job>& job);
  std::shared_ptr<Job> take_planned(Split split, const torch::Tensor& indices,
                                    std::optional<uint64_t> seed);
  void top_up();
  void read_ahead_eval(Split split, const torch::Tensor& indices);
  void worker_loop(Worker& worker);
  void build_sample(Worker& worker, Job& job, int64_t position);
  void finish_item(Job& job);
  bool known_bad(Split split, int64_t index) const;
  void record_bad(Split split, int64_t index, const std::string& message);

  std::shared_ptr<const ImageSource> source_;
  TransformSpec spec_;
  LoaderOptions options_;
  int64_t sample_bytes_;

  // Work shared with the threads.
  std::mutex queue_mutex_;
  std::condition_variable queue_cv_;
  std::deque<std::pair<std::shared_ptr<Job>, int64_t>> queue_;  // (batch, position)
  bool stopping_ = false;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::thread> threads_;
  std::unique_ptr<Worker> inline_worker_;  // workers = 0

  // Training-thread state: the plan and the batches built ahead from it.
  std::optional<train::BatchPlan> plan_;
  int64_t next_step_ = 0;
  int64_t next_micro_ = 0;
  int64_t permutation_epoch_ = -1;
  torch::Tensor permutation_;
  std::deque<std::shared_ptr<Job>> planned_;
  std::shared_ptr<Job> eval_ahead_;
  int64_t hits_ = 0;
  int64_t misses_ = 0;

  // Unreadable samples (skip_corrupt).
  mutable std::mutex bad_mutex_;
  std::set<std::pair<int, int64_t>> bad_;
  std::vector<std::string> bad_messages_;
  std::set<std::string> printed_;
  std::atomic<int64_t> bad_count_{0};
};

}  // namespace batchlab::data
