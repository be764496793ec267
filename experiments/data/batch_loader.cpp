#include "experiments/data/batch_loader.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <cstdio>

#include "core/config/batch_phases.h"
#include "core/errors.h"
#include "core/train/data_order.h"

namespace batchlab::data {
namespace {

// Unreadable images printed one by one before the rest are only counted.
constexpr size_t kPrintedSkips = 20;

int split_key(Split split) { return static_cast<int>(split); }

bool same_request(Split a_split, const std::vector<int64_t>& a_indices,
                  const std::optional<uint64_t>& a_seed, Split b_split,
                  const torch::Tensor& b_indices, const std::optional<uint64_t>& b_seed) {
  if (a_split != b_split || a_seed != b_seed ||
      static_cast<int64_t>(a_indices.size()) != b_indices.size(0)) {
    return false;
  }
  const int64_t* p = b_indices.data_ptr<int64_t>();
  return std::equal(a_indices.begin(), a_indices.end(), p);
}

}  // namespace

// One batch being built: its request, its output tensors and the count of samples still to do.
struct BatchLoader::Job {
  Split split = Split::train;
  std::vector<int64_t> indices;
  std::optional<uint64_t> seed;
  torch::Tensor images;  // uint8 [B, 3, S, S]
  torch::Tensor labels;  // int64 [B]
  uint8_t* image_data = nullptr;
  int64_t* label_data = nullptr;
  std::atomic<int64_t> remaining{0};
  std::atomic<bool> cancelled{false};
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  int64_t error_position =
      -1;  // the lowest failing position, so the error does not depend on timing
  std::exception_ptr error;
};

struct BatchLoader::Worker {
  std::unique_ptr<ImageReader> reader;
  ResampleScratch scratch;
};

BatchLoader::BatchLoader(std::shared_ptr<const ImageSource> source, TransformSpec spec,
                         LoaderOptions options)
    : source_(std::move(source)),
      spec_(spec),
      options_(options),
      sample_bytes_(3 * spec.image_size * spec.image_size) {
  if (options_.workers == 0) {
    inline_worker_ = std::make_unique<Worker>();
    inline_worker_->reader = source_->make_reader();
    return;
  }
  for (int64_t i = 0; i < options_.workers; ++i) {
    workers_.push_back(std::make_unique<Worker>());
    workers_.back()->reader = source_->make_reader();
  }
  for (auto& w : workers_) threads_.emplace_back([this, &w] { worker_loop(*w); });
}

BatchLoader::~BatchLoader() {
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    stopping_ = true;
    for (auto& item : queue_) item.first->cancelled = true;
    queue_.clear();
  }
  queue_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

std::shared_ptr<BatchLoader::Job> BatchLoader::make_job(Split split, const torch::Tensor& indices,
                                                        std::optional<uint64_t> seed) const {
  auto job = std::make_shared<Job>();
  const torch::Tensor idx = indices.to(torch::kInt64).contiguous();
  const int64_t n = idx.size(0);
  job->split = split;
  job->indices.assign(idx.data_ptr<int64_t>(), idx.data_ptr<int64_t>() + n);
  job->seed = seed;
  const auto pinned = torch::TensorOptions().pinned_memory(options_.pin_memory);
  job->images =
      torch::empty({n, 3, spec_.image_size, spec_.image_size}, pinned.dtype(torch::kUInt8));
  job->labels = torch::empty({n}, pinned.dtype(torch::kInt64));
  job->image_data = job->images.data_ptr<uint8_t>();
  job->label_data = job->labels.data_ptr<int64_t>();
  job->remaining = n;
  const int64_t size = source_->size(split);
  for (int64_t i : job->indices) {
    if (i < 0 || i >= size) {
      throw Error(
          fmt::format("image batch: index {} outside the {} samples of the split", i, size));
    }
  }
  return job;
}

void BatchLoader::enqueue(const std::shared_ptr<Job>& job, bool urgent) {
  const auto n = static_cast<int64_t>(job->indices.size());
  if (n == 0) {
    job->done = true;
    return;
  }
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    if (urgent) {
      for (int64_t p = n - 1; p >= 0; --p) queue_.emplace_front(job, p);
    } else {
      for (int64_t p = 0; p < n; ++p) queue_.emplace_back(job, p);
    }
  }
  queue_cv_.notify_all();
}

void BatchLoader::worker_loop(Worker& worker) {
  for (;;) {
    std::pair<std::shared_ptr<Job>, int64_t> item;
    {
      std::unique_lock<std::mutex> lock(queue_mutex_);
      queue_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    Job& job = *item.first;
    if (!job.cancelled) {
      try {
        build_sample(worker, job, item.second);
      } catch (...) {
        std::lock_guard<std::mutex> lock(job.mutex);
        if (job.error_position < 0 || item.second < job.error_position) {
          job.error_position = item.second;
          job.error = std::current_exception();
        }
      }
    }
    finish_item(job);
  }
}

void BatchLoader::finish_item(Job& job) {
  if (job.remaining.fetch_sub(1) == 1) {
    std::lock_guard<std::mutex> lock(job.mutex);
    job.done = true;
    job.cv.notify_all();
  }
}

bool BatchLoader::known_bad(Split split, int64_t index) const {
  if (bad_count_.load(std::memory_order_relaxed) == 0) return false;
  std::lock_guard<std::mutex> lock(bad_mutex_);
  return bad_.count({split_key(split), index}) > 0;
}

void BatchLoader::record_bad(Split split, int64_t index, const std::string& message) {
  std::lock_guard<std::mutex> lock(bad_mutex_);
  if (!bad_.insert({split_key(split), index}).second) return;
  bad_messages_.push_back(message);
  bad_count_.store(static_cast<int64_t>(bad_.size()));
  // A damaged shard makes all of its samples fail with one message: print each message once.
  if (!printed_.insert(message).second) return;
  if (printed_.size() <= kPrintedSkips) {
    std::fprintf(stderr, "batchlab: skipping an unreadable image (data.skip_corrupt = true): %s\n",
                 message.c_str());
  } else if (printed_.size() == kPrintedSkips + 1) {
    std::fprintf(stderr,
                 "batchlab: more unreadable images are skipped; they are counted, not "
                 "printed\n");
  }
}

void BatchLoader::build_sample(Worker& worker, Job& job, int64_t position) {
  const int64_t n = source_->size(job.split);
  const std::optional<uint64_t> seed =
      job.seed && options_.augment ? std::optional<uint64_t>(sample_seed(*job.seed, position))
                                   : std::nullopt;
  uint8_t* out = job.image_data + position * sample_bytes_;
  const int64_t first = job.indices[static_cast<size_t>(position)];
  // The requested sample, or with skip_corrupt the next readable one after it (wrapping around).
  for (int64_t step = 0; step < n; ++step) {
    const int64_t index = (first + step) % n;
    if (options_.skip_corrupt && known_bad(job.split, index)) continue;
    try {
      load_sample(*worker.reader, job.split, index, spec_, seed, out, worker.scratch);
      job.label_data[position] = source_->label(job.split, index);
      return;
    } catch (const DataError& e) {
      if (!options_.skip_corrupt) throw;
      record_bad(job.split, index, e.what());
    }
  }
  throw DataError(fmt::format("every one of the {} images of the {} split is unreadable ({})", n,
                              train::split_name(job.split), source_->description()));
}

ImageBatch BatchLoader::wait(const std::shared_ptr<Job>& job) {
  {
    std::unique_lock<std::mutex> lock(job->mutex);
    job->cv.wait(lock, [&] { return job->done; });
  }
  if (job->error) std::rethrow_exception(job->error);
  return {job->images, job->labels};
}

std::shared_ptr<BatchLoader::Job> BatchLoader::take_planned(Split split,
                                                            const torch::Tensor& indices,
                                                            std::optional<uint64_t> seed) {
  for (size_t k = 0; k < planned_.size(); ++k) {
    const Job& job = *planned_[k];
    if (!same_request(job.split, job.indices, job.seed, split, indices, seed)) continue;
    // Batches planned before this one were not asked for (the trainer moved on): drop them.
    for (size_t d = 0; d < k; ++d) planned_[d]->cancelled = true;
    auto found = planned_[k];
    planned_.erase(planned_.begin(), planned_.begin() + static_cast<std::ptrdiff_t>(k) + 1);
    return found;
  }
  return nullptr;
}

void BatchLoader::plan(const train::BatchPlan& plan) {
  if (options_.workers == 0) return;  // nothing runs ahead without loader threads
  for (auto& job : planned_) job->cancelled = true;
  planned_.clear();
  plan_ = plan;
  next_step_ = plan.first_step;
  next_micro_ = 0;
  top_up();
}

void BatchLoader::top_up() {
  if (!plan_) return;
  const train::BatchGeometry& g = plan_->geometry;
  while (static_cast<int64_t>(planned_.size()) < options_.prefetch &&
         (plan_->end_step <= 0 || next_step_ < plan_->end_step)) {
    const config::DataPosition at = config::fixed_batch_position(g, next_step_);
    if (at.epoch != permutation_epoch_) {
      permutation_ = train::epoch_permutation(plan_->data_seed, at.epoch, plan_->train_size);
      permutation_epoch_ = at.epoch;
    }
    const torch::Tensor indices =
        train::micro_batch_at(permutation_, g, at.offset, plan_->rank, next_micro_);
    const uint64_t step_seed = train::mix_seed(static_cast<uint64_t>(plan_->data_seed),
                                               static_cast<uint64_t>(next_step_) + 1);
    auto job = make_job(Split::train, indices,
                        train::mix_seed(step_seed, static_cast<uint64_t>(next_micro_)));
    enqueue(job, /*urgent=*/false);
    planned_.push_back(std::move(job));
    if (++next_micro_ == g.accum) {
      next_micro_ = 0;
      ++next_step_;
    }
  }
}

void BatchLoader::read_ahead_eval(Split split, const torch::Tensor& indices) {
  // Evaluation walks the test and validation splits in consecutive chunks: queue the chunk after
  // this one.
  const int64_t n = indices.size(0);
  if (n == 0) return;
  const int64_t* p = indices.data_ptr<int64_t>();
  for (int64_t i = 1; i < n; ++i) {
    if (p[i] != p[0] + i) return;
  }
  const int64_t begin = p[0] + n;
  const int64_t end = std::min(begin + n, source_->size(split));
  if (begin >= end) return;
  eval_ahead_ = make_job(split, torch::arange(begin, end, torch::kInt64), std::nullopt);
  enqueue(eval_ahead_, /*urgent=*/false);
}

ImageBatch BatchLoader::load(Split split, const torch::Tensor& indices,
                             std::optional<uint64_t> seed) {
  const torch::Tensor idx = indices.to(torch::kInt64).contiguous();
  if (options_.workers == 0) {
    auto job = make_job(split, idx, seed);
    for (int64_t p = 0; p < static_cast<int64_t>(job->indices.size()); ++p) {
      build_sample(*inline_worker_, *job, p);
    }
    return {job->images, job->labels};
  }
  std::shared_ptr<Job> job;
  if (split == Split::train && seed) {
    job = take_planned(split, idx, seed);
    job ? ++hits_ : ++misses_;
  } else if (split != Split::train && eval_ahead_) {
    if (same_request(eval_ahead_->split, eval_ahead_->indices, eval_ahead_->seed, split, idx,
                     seed)) {
      job = eval_ahead_;
    } else {
      eval_ahead_->cancelled = true;
    }
    eval_ahead_.reset();
  }
  if (!job) {
    job = make_job(split, idx, seed);
    enqueue(job, /*urgent=*/true);
  }
  if (split == Split::train && seed) top_up();
  if (split != Split::train && !seed) read_ahead_eval(split, idx);
  return wait(job);
}

int64_t BatchLoader::skipped_count() const { return bad_count_.load(); }

std::vector<std::string> BatchLoader::skipped_messages() const {
  std::lock_guard<std::mutex> lock(bad_mutex_);
  return bad_messages_;
}

}  // namespace batchlab::data
