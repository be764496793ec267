#include "results/batched_writer.h"

#include <algorithm>
#include <utility>

#include "results/errors.h"

namespace batchlab::results {

namespace {

BatchedWriterOptions sanitized(BatchedWriterOptions options) {
  // A threshold above the queue bound would leave submitters waiting for room that only the
  // timer frees; keep both at least one row.
  options.max_pending_rows = std::max<std::size_t>(options.max_pending_rows, 1);
  options.flush_rows = std::clamp<std::size_t>(options.flush_rows, 1, options.max_pending_rows);
  if (options.flush_interval.count() < 1) options.flush_interval = std::chrono::milliseconds(1);
  return options;
}

}  // namespace

BatchedWriter::BatchedWriter(const std::string& db_path, BatchedWriterOptions options)
    : BatchedWriter(Store(db_path, options.store), options) {}

BatchedWriter::BatchedWriter(Store store, BatchedWriterOptions options)
    : options_(sanitized(std::move(options))), path_(store.path()), store_(std::move(store)) {
  thread_ = std::thread([this] { run_writer(); });
}

BatchedWriter::~BatchedWriter() {
  try {
    close();
  } catch (...) {
    // Reported by an earlier submit()/flush() or lost by choice: see the header.
  }
}

void BatchedWriter::throw_if_failed_locked() const {
  if (error_) std::rethrow_exception(error_);
}

void BatchedWriter::enqueue(std::size_t count, const std::function<void(RowBatch&)>& add) {
  if (count == 0) return;
  std::unique_lock lock(mutex_);
  throw_if_failed_locked();
  if (stopping_) throw StoreError(path_, "cannot submit rows: the writer is closed");
  progress_.wait(
      lock, [&] { return error_ || pending_.size() + in_flight_ < options_.max_pending_rows; });
  throw_if_failed_locked();
  const bool was_empty = pending_.empty();
  if (was_empty) oldest_pending_ = std::chrono::steady_clock::now();
  add(pending_);
  submitted_ += count;
  // Wake the writer to start the interval timer for a first row, or to write a full batch.
  if (was_empty || pending_.size() >= options_.flush_rows) wake_writer_.notify_one();
}

void BatchedWriter::submit(StepRow row) {
  enqueue(1, [&](RowBatch& b) { b.steps.push_back(std::move(row)); });
}

void BatchedWriter::submit(EvalRow row) {
  enqueue(1, [&](RowBatch& b) { b.evals.push_back(std::move(row)); });
}

void BatchedWriter::submit(LayerStatRow row) {
  enqueue(1, [&](RowBatch& b) { b.layer_stats.push_back(std::move(row)); });
}

void BatchedWriter::submit(std::vector<LayerStatRow> rows) {
  enqueue(rows.size(), [&](RowBatch& b) {
    b.layer_stats.insert(b.layer_stats.end(), std::make_move_iterator(rows.begin()),
                         std::make_move_iterator(rows.end()));
  });
}

void BatchedWriter::submit(NoiseRow row) {
  enqueue(1, [&](RowBatch& b) { b.noise.push_back(std::move(row)); });
}

void BatchedWriter::submit(MilestoneRow row) {
  enqueue(1, [&](RowBatch& b) { b.milestones.push_back(std::move(row)); });
}

void BatchedWriter::flush() {
  std::unique_lock lock(mutex_);
  throw_if_failed_locked();
  const std::uint64_t target = submitted_;
  if (processed_ < target) {
    flush_requested_ = true;
    wake_writer_.notify_one();
    progress_.wait(lock, [&] { return processed_ >= target || error_; });
  }
  throw_if_failed_locked();
}

void BatchedWriter::close() {
  {
    std::unique_lock lock(mutex_);
    if (!closed_) {
      stopping_ = true;
      wake_writer_.notify_one();
    }
  }
  // The writer drains everything queued before it exits, so joining is the final flush.
  if (thread_.joinable()) thread_.join();
  std::unique_lock lock(mutex_);
  closed_ = true;
  throw_if_failed_locked();
}

void BatchedWriter::with_store(const std::function<void(Store&)>& fn) {
  flush();
  std::lock_guard store_lock(store_mutex_);
  fn(store_);
}

std::size_t BatchedWriter::pending() const {
  std::lock_guard lock(mutex_);
  return pending_.size() + in_flight_;
}

void BatchedWriter::run_writer() noexcept {
  std::unique_lock lock(mutex_);
  for (;;) {
    // Wait until a batch is due: enough rows, a flush or close asked for, or the oldest row has
    // waited flush_interval.
    for (;;) {
      if (pending_.empty()) {
        flush_requested_ = false;
        if (stopping_) return;
        wake_writer_.wait(lock);
        continue;
      }
      if (stopping_ || flush_requested_ || pending_.size() >= options_.flush_rows) break;
      const auto due = oldest_pending_ + options_.flush_interval;
      if (std::chrono::steady_clock::now() >= due) break;
      wake_writer_.wait_until(lock, due);
    }
    RowBatch batch;
    std::swap(batch, pending_);
    in_flight_ = batch.size();
    flush_requested_ = false;
    const std::uint64_t covered = submitted_;
    const bool failed_before = static_cast<bool>(error_);
    lock.unlock();

    std::exception_ptr failure;
    if (!failed_before) {  // after a failure, rows are dropped: the record is broken anyway
      try {
        std::lock_guard store_lock(store_mutex_);
        store_.write_batch(batch);
      } catch (...) {
        failure = std::current_exception();
      }
    }

    batch = RowBatch();  // free the rows before retaking the lock
    lock.lock();
    in_flight_ = 0;
    processed_ = covered;
    if (failure && !error_) error_ = failure;
    progress_.notify_all();
  }
}

}  // namespace batchlab::results
