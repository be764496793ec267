// One writer per file (DESIGN.md), but readers anywhere: `batchlab query`, `sweep status` or a
// plot may read while a job writes. In WAL mode neither side may see "database is locked", and a
// reader only ever sees whole committed batches (a prefix of the submitted rows).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "results/batched_writer.h"
#include "results/errors.h"
#include "results/query.h"
#include "tests/results/test_support.h"

namespace batchlab::results {
namespace {

using namespace std::chrono_literals;
using testing::TempDir;

constexpr long long kRows = 30000;
constexpr long long kHalf = kRows / 2;

StepRow step_row(std::int64_t step) {
  StepRow row;
  row.run_id = "r1";
  row.step = step;
  row.samples = step * 128;
  row.train_loss = 1.0 / static_cast<double>(step);
  return row;
}

void create_run(const std::string& path) {
  Store store(path);
  RunRow run;
  run.run_id = "r1";
  run.status = "running";
  store.upsert_run(run);
}

// Row count, or -1 when the rows seen are not exactly steps 1..count (a torn or reordered batch).
long long committed_prefix(const std::string& path) {
  const auto r = query_readonly(path, "SELECT count(*), coalesce(max(step), 0) FROM steps");
  const long long count = std::stoll(r.rows.at(0).at(0).value());
  const long long max_step = std::stoll(r.rows.at(0).at(1).value());
  return count == max_step ? count : -1;
}

// Writes kRows steps; after the first half it flushes and calls `halfway`, which returns once a
// reader has seen that state, so reads provably overlap the writing.
void write_all(const std::string& path, const std::function<void()>& halfway) {
  BatchedWriter writer(path, BatchedWriterOptions{250, 5ms, 1000, {}});
  for (long long s = 1; s <= kRows; ++s) {
    writer.submit(step_row(s));
    if (s == kHalf) {
      writer.flush();
      halfway();
    }
  }
  writer.close();
}

TEST(Concurrency, ReaderThreadReadsWhileBatchedWriterWrites) {
  TempDir dir;
  const std::string path = dir.file("shared.db");
  create_run(path);

  std::atomic<bool> done{false};
  std::atomic<bool> saw_half{false};
  std::atomic<int> reads{0};
  std::string reader_error;
  bool consistent = true;
  std::thread reader([&] {
    long long last = 0;
    try {
      while (!done.load()) {
        const long long n = committed_prefix(path);
        if (n < last) consistent = false;  // -1 (torn) or a count that went down
        if (n == kHalf) saw_half = true;
        last = n;
        reads.fetch_add(1);
      }
    } catch (const std::exception& e) {
      reader_error = e.what();
    }
  });
  write_all(path, [&] {
    const auto until = std::chrono::steady_clock::now() + 30s;
    while (!saw_half.load() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(1ms);
    }
  });
  done = true;
  reader.join();

  EXPECT_EQ(reader_error, "");
  EXPECT_TRUE(consistent);
  EXPECT_TRUE(saw_half.load());
  EXPECT_GT(reads.load(), 1);
  EXPECT_EQ(committed_prefix(path), kRows);
}

// The same with the reader in another process, as `batchlab query` would be. The child is forked
// before the writer thread exists, so it starts from a single-threaded parent.
TEST(Concurrency, ReaderProcessReadsWhileBatchedWriterWrites) {
  TempDir dir;
  const std::string path = dir.file("shared_process.db");
  create_run(path);

  int to_parent[2];
  ASSERT_EQ(pipe(to_parent), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(to_parent[0]);
    int code = 0;
    try {
      long long last = 0;
      bool told = false;
      const auto until = std::chrono::steady_clock::now() + 60s;
      while (last < kRows && std::chrono::steady_clock::now() < until) {
        const long long n = committed_prefix(path);
        if (n < last) {
          code = 3;
          break;
        }
        if (n == kHalf && !told) {
          told = write(to_parent[1], "h", 1) == 1;
        }
        last = n;
      }
      if (code == 0 && (last != kRows || !told)) code = 4;
    } catch (...) {
      code = 2;  // e.g. "database is locked"
    }
    _exit(code);  // no gtest teardown, no destructors of the parent's objects
  }
  close(to_parent[1]);

  write_all(path, [&] {
    char byte = 0;
    EXPECT_EQ(read(to_parent[0], &byte, 1), 1) << "the reader process never saw the halfway state";
  });
  close(to_parent[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "2: reader threw, 3: torn or shrinking read, 4: never saw all rows or the halfway state";
  EXPECT_EQ(committed_prefix(path), kRows);
}

}  // namespace
}  // namespace batchlab::results
