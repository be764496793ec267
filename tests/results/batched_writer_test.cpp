// BatchedWriter tests: everything submitted lands, batches go out by size and by time, the
// training thread only waits on a full queue, and failures on the writer thread come back to the
// caller instead of being lost or terminating the process.
#include "results/batched_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "results/errors.h"
#include "tests/results/test_support.h"

namespace batchlab::results {
namespace {

using namespace std::chrono_literals;
using testing::RawDb;
using testing::TempDir;

StepRow step_row(const std::string& run, std::int64_t step) {
  StepRow row;
  row.run_id = run;
  row.step = step;
  row.epoch = 0.01 * static_cast<double>(step);
  row.samples = step * 256;
  row.wall_s = 0.1 * static_cast<double>(step);
  row.lr = 0.1;
  row.train_loss = 2.0;
  return row;
}

void add_run(Store& store, const std::string& id) {
  RunRow run;
  run.run_id = id;
  run.status = "running";
  store.upsert_run(run);
}

// Polls a reader connection until `sql` returns `expected` or the deadline passes.
bool eventually_equals(const std::string& path, const std::string& sql, long long expected,
                       std::chrono::milliseconds deadline = 10s) {
  RawDb db(path, SQLITE_OPEN_READONLY);
  const auto until = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < until) {
    if (db.integer(sql) == expected) return true;
    std::this_thread::sleep_for(5ms);
  }
  return db.integer(sql) == expected;
}

TEST(BatchedWriter, EveryRowSubmittedLandsAfterFlush) {
  TempDir dir;
  const std::string path = dir.file("many.db");
  BatchedWriter writer(path, BatchedWriterOptions{256, 1000ms, 4096, {}});
  writer.with_store([](Store& s) { add_run(s, "r1"); });
  constexpr int kSteps = 20000;
  for (int s = 1; s <= kSteps; ++s) {
    writer.submit(step_row("r1", s));
    if (s % 100 == 0) {
      writer.submit(EvalRow{"r1", s, 0.0, 0, 0.0, 1.0, 0.5, 1.1, 0.45, {}, {}, 0.2, {}, {}});
      writer.submit(NoiseRow{"r1", s, 256, 4096, 0.5, 10.0, 20.0});
      writer.submit(std::vector<LayerStatRow>{{"r1", s, "conv1", 9, 1.0, 0.1, 10.0, 1.0, 0.01},
                                              {"r1", s, "fc", 9, 1.0, 0.1, 10.0, 1.0, 0.01}});
    }
  }
  writer.submit(MilestoneRow{"r1", "test_acc", 0.4, 100, 1.0, 25600, 10.0});
  writer.flush();
  EXPECT_EQ(writer.pending(), 0u);

  RawDb db(path, SQLITE_OPEN_READONLY);
  EXPECT_EQ(db.integer("SELECT count(*) FROM steps"), kSteps);
  EXPECT_EQ(db.integer("SELECT max(step) FROM steps"), kSteps);
  EXPECT_EQ(db.integer("SELECT count(*) FROM evals"), kSteps / 100);
  EXPECT_EQ(db.integer("SELECT count(*) FROM noise_scale"), kSteps / 100);
  EXPECT_EQ(db.integer("SELECT count(*) FROM layer_stats"), 2 * kSteps / 100);
  EXPECT_EQ(db.integer("SELECT count(*) FROM milestones"), 1);
  EXPECT_EQ(db.integer("SELECT last_step FROM runs"), kSteps);
}

TEST(BatchedWriter, FlushesOnTimerWithoutBeingAsked) {
  TempDir dir;
  const std::string path = dir.file("timer.db");
  BatchedWriter writer(path, BatchedWriterOptions{100000, 50ms, 200000, {}});
  writer.with_store([](Store& s) { add_run(s, "r1"); });
  writer.submit(step_row("r1", 1));
  writer.submit(step_row("r1", 2));
  EXPECT_TRUE(eventually_equals(path, "SELECT count(*) FROM steps", 2));
  writer.submit(step_row("r1", 3));
  EXPECT_TRUE(eventually_equals(path, "SELECT count(*) FROM steps", 3));
}

TEST(BatchedWriter, FlushesWhenBatchIsFull) {
  TempDir dir;
  const std::string path = dir.file("size.db");
  BatchedWriter writer(path, BatchedWriterOptions{10, std::chrono::hours(1), 1000, {}});
  writer.with_store([](Store& s) { add_run(s, "r1"); });
  for (int s = 1; s <= 10; ++s) writer.submit(step_row("r1", s));
  EXPECT_TRUE(eventually_equals(path, "SELECT count(*) FROM steps", 10));
}

TEST(BatchedWriter, DestructorFlushes) {
  TempDir dir;
  const std::string path = dir.file("dtor.db");
  {
    BatchedWriter writer(path, BatchedWriterOptions{1000, std::chrono::hours(1), 5000, {}});
    writer.with_store([](Store& s) { add_run(s, "r1"); });
    for (int s = 1; s <= 123; ++s) writer.submit(step_row("r1", s));
  }
  RawDb db(path, SQLITE_OPEN_READONLY);
  EXPECT_EQ(db.integer("SELECT count(*) FROM steps"), 123);
}

TEST(BatchedWriter, WithStoreIsOrderedAfterSubmittedRows) {
  TempDir dir;
  const std::string path = dir.file("order.db");
  BatchedWriter writer(path);
  writer.with_store([](Store& s) { add_run(s, "r1"); });
  for (int s = 1; s <= 50; ++s) writer.submit(step_row("r1", s));
  // A resume: everything after the checkpoint at step 20 goes, including rows still queued.
  writer.with_store([](Store& s) { s.delete_rows_after("r1", 20); });
  std::size_t count = 0;
  writer.with_store([&](Store& s) { count = s.read_steps("r1").size(); });
  EXPECT_EQ(count, 20u);
  EXPECT_THROW(writer.with_store([](Store& s) { s.set_run_status("ghost", "done"); }), StoreError);
}

TEST(BatchedWriter, ConstraintViolationIsRethrownOnFlushAndEveryCallAfter) {
  TempDir dir;
  const std::string path = dir.file("fk.db");
  BatchedWriter writer(path, BatchedWriterOptions{1000, std::chrono::hours(1), 5000, {}});
  writer.with_store([](Store& s) { add_run(s, "r1"); });
  writer.submit(step_row("r1", 1));
  writer.submit(step_row("no-such-run", 1));
  try {
    writer.flush();
    FAIL() << "flush must report the failed batch";
  } catch (const StoreError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("FOREIGN KEY"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("no-such-run"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr(path));
  }
  EXPECT_THROW(writer.submit(step_row("r1", 2)), StoreError);
  EXPECT_THROW(writer.flush(), StoreError);
  EXPECT_THROW(writer.close(), StoreError);
  // The failed batch was one transaction: the good row in it is not half-written either.
  RawDb db(path, SQLITE_OPEN_READONLY);
  EXPECT_EQ(db.integer("SELECT count(*) FROM steps"), 0);
}

TEST(BatchedWriter, FailureIsRethrownByTheNextSubmit) {
  TempDir dir;
  const std::string path = dir.file("submit.db");
  BatchedWriter writer(path, BatchedWriterOptions{1, 1ms, 100, {}});
  writer.submit(step_row("no-such-run", 1));
  const auto until = std::chrono::steady_clock::now() + 10s;
  bool thrown = false;
  while (!thrown && std::chrono::steady_clock::now() < until) {
    try {
      writer.submit(step_row("no-such-run", 2));
      std::this_thread::sleep_for(5ms);
    } catch (const StoreError&) {
      thrown = true;
    }
  }
  EXPECT_TRUE(thrown);
}

TEST(BatchedWriter, LockHeldPastBusyTimeoutIsReported) {
  TempDir dir;
  const std::string path = dir.file("locked.db");
  BatchedWriterOptions options{1000, std::chrono::hours(1), 5000, {}};
  options.store.busy_timeout = 100ms;
  BatchedWriter writer(path, options);
  writer.with_store([](Store& s) { add_run(s, "r1"); });
  RawDb other(path);
  other.exec("BEGIN IMMEDIATE");  // another writer: breaks DESIGN's rule on purpose
  writer.submit(step_row("r1", 1));
  try {
    writer.flush();
    FAIL() << "expected SQLITE_BUSY";
  } catch (const StoreError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("locked"));
  }
  other.exec("ROLLBACK");
}

TEST(BatchedWriter, SubmitWaitsOnlyWhenTheQueueIsFull) {
  TempDir dir;
  const std::string path = dir.file("bounded.db");
  BatchedWriterOptions options{8, std::chrono::hours(1), 8, {}};
  BatchedWriter writer(path, options);
  writer.with_store([](Store& s) { add_run(s, "r1"); });

  RawDb other(path);
  other.exec("BEGIN IMMEDIATE");  // stall the writer thread on the lock (busy timeout 30 s)
  for (int s = 1; s <= 8; ++s) writer.submit(step_row("r1", s));  // fills the queue, no wait
  auto ninth = std::async(std::launch::async, [&] { writer.submit(step_row("r1", 9)); });
  EXPECT_EQ(ninth.wait_for(300ms), std::future_status::timeout);  // queue full: it waits
  other.exec("COMMIT");
  EXPECT_EQ(ninth.wait_for(10s), std::future_status::ready);
  ninth.get();
  writer.flush();
  RawDb db(path, SQLITE_OPEN_READONLY);
  EXPECT_EQ(db.integer("SELECT count(*) FROM steps"), 9);
}

TEST(BatchedWriter, CloseIsIdempotentAndRefusesLaterRows) {
  TempDir dir;
  const std::string path = dir.file("close.db");
  BatchedWriter writer(path);
  writer.with_store([](Store& s) { add_run(s, "r1"); });
  writer.submit(step_row("r1", 1));
  writer.close();
  writer.close();
  EXPECT_THROW(writer.submit(step_row("r1", 2)), StoreError);
  RawDb db(path, SQLITE_OPEN_READONLY);
  EXPECT_EQ(db.integer("SELECT count(*) FROM steps"), 1);
}

TEST(BatchedWriter, OpenErrorsThrowOnTheCallingThread) {
  TempDir dir;
  const std::string path = dir.file("future.db");
  {
    RawDb db(path);
    db.exec("PRAGMA user_version = 42");
  }
  EXPECT_THROW(BatchedWriter writer(path), StoreInputError);
}

}  // namespace
}  // namespace batchlab::results
