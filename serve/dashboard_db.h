// The dashboard's view of one results database: checked at startup, then read through a pool of
// read-only connections (SQLITE_OPEN_READONLY and PRAGMA query_only), one per request thread at a
// time. In WAL mode these readers neither block nor are blocked by the sweep that writes the file;
// nothing here can write to it, and nothing is created beside it (results::open_for_reading).
// Every lease looks at the file on disk first: a file overwritten in place, or another file renamed
// into its place (how a Slurm-run study publishes its database), gets fresh connections, checked
// again: a batchlab database of the schema served is followed, anything else is refused with the
// reason, and so is a deleted file. No answer comes from a database that is no longer there.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "results/sqlite_util.h"

namespace batchlab::serve {

// How long a read waits for a lock held by a writer in rollback-journal mode (WAL readers never
// wait): long enough for a batched insert, short enough that a stuck lock is reported.
inline constexpr int kBusyTimeoutMs = 5000;

class DashboardDb {
 public:
  // Opens `path` read-only and checks that it is a batchlab database of the schema version this
  // build reads. Throws results::StoreInputError naming the file and the fix for: a missing file,
  // a file that is not SQLite, an SQLite file without batchlab's tables, an older or a newer
  // schema, and a database locked past the busy timeout.
  explicit DashboardDb(std::string path);

  const std::string& path() const noexcept { return path_; }
  std::int64_t schema_version() const noexcept { return schema_version_; }

  // A token that changes whenever the database or its WAL changes (their sizes and modification
  // times: any commit appends to the WAL or, after a checkpoint, rewrites the file). Cheap enough
  // to answer every poll of every open page.
  std::string data_version() const;

  // Runs fn(results::Connection&) with a pooled read-only connection and returns its result.
  // Throws results::StoreError naming the problem when the file on disk is gone, or (overwritten or
  // replaced) is no longer a batchlab database of this schema.
  template <class F>
  auto with_connection(F&& fn) {
    Lease lease(*this);
    return fn(*lease.connection);
  }

  // Checks the database again (the file may have been deleted, replaced or locked since
  // startup); returns "" when readable, else the message the page and the terminal show.
  std::string health();

  // The same check as every lease makes; throws results::StoreError with the message.
  void check_now();

 private:
  struct Lease {
    explicit Lease(DashboardDb& db);
    ~Lease();
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    DashboardDb& owner;
    std::unique_ptr<results::Connection> connection;
    std::string signature;
  };

  struct Pooled {
    std::unique_ptr<results::Connection> connection;
    std::string signature;  // of the file when the connection was opened
  };

  // What the file on disk is now (device and inode, size, modification time, header, whether -wal
  // and -shm exist); throws results::StoreError when it is gone.
  std::string current_signature() const;

  std::string path_;
  std::int64_t schema_version_ = 0;
  std::mutex mutex_;
  std::vector<Pooled> idle_;
  std::string checked_signature_;  // the file's signature when check_schema last passed
};

// Opens one read-only, query-only connection with the dashboard's busy timeout, creating no -wal or
// -shm file (also used by the startup check and the tests).
std::unique_ptr<results::Connection> open_readonly(const std::string& path);

}  // namespace batchlab::serve
