// A read on a database another process keeps locked past the busy timeout (issue 35): the error
// says that the file is locked, by which process and with what kind of lock, and that it is no
// fault of the input (a StoreError, exit 1, not a StoreInputError); it never calls the statement
// "invalid SQL".
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "results/errors.h"
#include "results/query.h"
#include "results/store.h"
#include "tests/results/test_support.h"

namespace batchlab::results {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::RawDb;
using testing::TempDir;

// A child process holding an exclusive transaction (a write in progress) on `db` until killed.
class LockHolder {
 public:
  explicit LockHolder(const std::string& db) {
    int ready[2];
    if (::pipe(ready) != 0) throw std::runtime_error("pipe failed");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(ready[0]);
      RawDb holder(db);
      holder.exec("BEGIN EXCLUSIVE; INSERT INTO runs(run_id, status) VALUES('held', 'planned');");
      const char byte = 1;
      if (::write(ready[1], &byte, 1) != 1) ::_exit(1);
      for (;;) ::pause();
    }
    ::close(ready[1]);
    char byte = 0;
    const bool locked = ::read(ready[0], &byte, 1) == 1;
    ::close(ready[0]);
    if (!locked) throw std::runtime_error("the lock holder did not start");
  }
  ~LockHolder() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  LockHolder(const LockHolder&) = delete;
  LockHolder& operator=(const LockHolder&) = delete;

  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

TEST(LockedDatabase, AReadPastTheBusyTimeoutSaysWhoHoldsTheLock) {
  TempDir dir;
  const std::string db = dir.file("locked.db");
  { Store store(db); }
  // Rollback-journal mode, where a writer's exclusive lock keeps readers out (WAL, batchlab's
  // mode, never blocks them).
  RawDb(db).exec("PRAGMA journal_mode = DELETE");
  LockHolder holder(db);
  const auto start = std::chrono::steady_clock::now();
  std::string message;
  try {
    query_readonly(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table'", {},
                   std::chrono::milliseconds(300));
    ADD_FAILURE() << "read a locked database";
  } catch (const StoreInputError& e) {
    ADD_FAILURE() << "a lock is no bad input: " << e.what();
  } catch (const StoreError& e) {
    message = e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_THAT(message, HasSubstr(db + ": the database is locked"));
  EXPECT_THAT(message, HasSubstr("process " + std::to_string(holder.pid()) +
                                 " holds an exclusive lock on it (a write in progress)"));
  EXPECT_THAT(message, Not(HasSubstr("invalid SQL")));
}

}  // namespace
}  // namespace batchlab::results
