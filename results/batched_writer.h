// BatchedWriter: keeps SQLite off the training thread. submit() appends a row to an in-memory
// queue and returns; a background thread commits queued rows in one transaction every
// `flush_rows` rows or `flush_interval` after the oldest waiting row, whichever comes first. The
// training thread only waits when `max_pending_rows` rows are not yet committed (the queue is
// bounded so a stalled disk cannot eat the host's memory).
//
// A write that fails on the background thread is kept and rethrown (same exception type) by the
// next submit() or flush(), and by every one after it: rows were lost, so the writer stays
// failed rather than let a run finish with a silently incomplete record. Nothing on the
// background thread can reach std::terminate.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "results/store.h"

namespace batchlab::results {

struct BatchedWriterOptions {
  std::size_t flush_rows = 512;
  std::chrono::milliseconds flush_interval{1000};
  std::size_t max_pending_rows = 65536;
  StoreOptions store;
};

class BatchedWriter {
 public:
  // Opens the Store on the calling thread, so a bad path or a too-new schema throws here.
  explicit BatchedWriter(const std::string& db_path, BatchedWriterOptions options = {});
  explicit BatchedWriter(Store store, BatchedWriterOptions options = {});
  // Flushes and stops the thread. A failure at this point cannot be thrown from a destructor and
  // is dropped: call close() first wherever the last rows matter.
  ~BatchedWriter();
  BatchedWriter(const BatchedWriter&) = delete;
  BatchedWriter& operator=(const BatchedWriter&) = delete;

  void submit(StepRow row);
  void submit(EvalRow row);
  void submit(LayerStatRow row);
  void submit(std::vector<LayerStatRow> rows);  // one step's layers at once
  void submit(NoiseRow row);
  void submit(MilestoneRow row);

  // Blocks until every row submitted before the call is committed; rethrows a writer failure.
  void flush();
  // flush(), then stops the background thread. Idempotent; submit() afterwards throws.
  void close();

  // Runs fn on the Store after flushing, serialized with the background writes, so run-level
  // updates (upsert_run, set_run_status, delete_rows_after) stay ordered with submitted rows.
  // Exceptions from fn propagate to the caller. fn must not call back into this writer.
  void with_store(const std::function<void(Store&)>& fn);

  // Rows submitted but not yet committed.
  std::size_t pending() const;
  const std::string& path() const noexcept { return path_; }

 private:
  void run_writer() noexcept;
  // Waits for room, then lets add() queue the rows under the lock.
  void enqueue(std::size_t count, const std::function<void(RowBatch&)>& add);
  void throw_if_failed_locked() const;

  BatchedWriterOptions options_;
  std::string path_;

  std::mutex store_mutex_;  // the Store is one connection: one user at a time
  Store store_;

  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable wake_writer_;
  std::condition_variable progress_;
  RowBatch pending_;
  std::size_t in_flight_ = 0;    // rows the writer took and has not finished with
  std::uint64_t submitted_ = 0;  // rows ever submitted
  std::uint64_t processed_ = 0;  // rows ever committed (or dropped after a failure)
  std::chrono::steady_clock::time_point oldest_pending_{};
  bool flush_requested_ = false;
  bool stopping_ = false;
  bool closed_ = false;
  std::exception_ptr error_;

  std::thread thread_;
};

}  // namespace batchlab::results
