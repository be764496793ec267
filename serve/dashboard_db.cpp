#include "serve/dashboard_db.h"

#include <fmt/format.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "results/errors.h"
#include "results/query.h"
#include "results/schema.h"
#include "results/sqlite_util.h"

namespace batchlab::serve {

namespace {

// The tables every batchlab database has had since schema version 1.
const char* const kRequiredTables[] = {"runs",        "steps",       "evals",
                                       "layer_stats", "noise_scale", "milestones"};

std::string file_version(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "-";
  return fmt::format("{}.{}.{}", static_cast<long long>(st.st_size),
                     static_cast<long long>(st.st_mtim.tv_sec),
                     static_cast<long long>(st.st_mtim.tv_nsec));
}

// Reads user_version and the table names; translates SQLite's codes into what a person can do.
std::int64_t check_schema(results::Connection& db) {
  const std::string& path = db.path();
  std::vector<std::string> tables;
  try {
    results::Statement list(db, "SELECT name FROM sqlite_master WHERE type = 'table'");
    while (list.step()) tables.push_back(list.column_text(0));
  } catch (const results::StoreError& e) {
    const int code = db.last_error_code();
    if (code == SQLITE_NOTADB) {
      throw results::StoreInputError(
          path,
          "not an SQLite database; pass the file a sweep writes (the [sweep] results key, "
          "e.g. results/quickstart.db)");
    }
    // A lock is no fault of the input: exit 1 with the lock's holder, as `report` and `query`
    // say it (results/sqlite_util.h), not exit 2.
    if (results::is_locked_database(code)) {
      throw results::StoreError(
          path, results::locked_database_context(path, "while the dashboard checked its schema"),
          e.sqlite_message());
    }
    throw results::StoreInputError(path, "cannot read the database", e.sqlite_message());
  }
  for (const char* table : kRequiredTables) {
    if (std::find(tables.begin(), tables.end(), table) == tables.end()) {
      throw results::StoreInputError(
          path, fmt::format("an SQLite database, but not one batchlab wrote (no '{}' table); "
                            "pass the file a sweep writes (the [sweep] results key)",
                            table));
    }
  }
  const std::int64_t version = results::schema_version(db);
  const std::int64_t latest = results::latest_schema_version();
  if (version < latest) {
    throw results::StoreInputError(
        path, fmt::format("schema version {} is older than this batchlab's ({}); the dashboard "
                          "never writes, so upgrade it once with `batchlab results migrate --db "
                          "{}`, then serve it",
                          version, latest, path));
  }
  if (version > latest) {
    throw results::StoreInputError(
        path, fmt::format("schema version {} is newer than this batchlab's ({}); serve it with "
                          "the batchlab that wrote it, or upgrade batchlab",
                          version, latest));
  }
  return version;
}

}  // namespace

std::unique_ptr<results::Connection> open_readonly(const std::string& path) {
  // NOMUTEX: the pool hands a connection to one thread at a time, so SQLite's own per-call
  // locking is pure cost (about 12% of a 16-run curves answer).
  // A WAL-mode file no writer has open is opened immutable, so SQLite creates no empty -wal and
  // -shm beside it; a lease opens a new connection whenever the file changes (current_signature).
  auto db = std::make_unique<results::Connection>(
      results::open_for_reading(path, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX));
  sqlite3_busy_timeout(db->get(), kBusyTimeoutMs);
  // A second guard beside SQLITE_OPEN_READONLY: no write, not even to a temp table.
  db->exec("PRAGMA query_only = 1", "cannot make the connection query-only");
  // Reads map the file instead of copying each page through pread (a curve of a million rows
  // touches ~100 MB); the mapping is read-only like the connection.
  db->exec("PRAGMA mmap_size = 1073741824", "cannot set mmap_size");
  return db;
}

DashboardDb::DashboardDb(std::string path) : path_(std::move(path)) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path_, ec)) {
    throw results::StoreInputError(
        path_, std::filesystem::exists(path_, ec)
                   ? "not a regular file; pass the database file a sweep writes"
                   : "no such file; pass the database a sweep writes (the [sweep] results key, "
                     "e.g. results/quickstart.db after `bash scripts/quickstart.sh`)");
  }
  std::string signature = current_signature();
  auto db = open_readonly(path_);
  schema_version_ = check_schema(*db);
  checked_signature_ = signature;
  idle_.push_back(Pooled{std::move(db), std::move(signature)});
}

std::string DashboardDb::current_signature() const {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    throw results::StoreError(path_,
                              "the database file is gone (deleted or moved since the server "
                              "started); restart `batchlab serve` with its new path");
  }
  // The header holds the page count, change counter and schema cookie: a file overwritten in
  // place with other contents differs here even when its size and time do not.
  char header[100] = {};
  std::ifstream in(path_, std::ios::binary);
  in.read(header, sizeof header);
  const auto got = static_cast<std::size_t>(std::max<std::streamsize>(0, in.gcount()));
  std::error_code ec;
  // The file's identity is part of it: a study's coordinator publishes each snapshot as a new file
  // renamed into place, and connections opened on the old one would never see the new one.
  return fmt::format("{}:{}/{}.{}.{}/{}{}/", static_cast<unsigned long long>(st.st_dev),
                     static_cast<unsigned long long>(st.st_ino), static_cast<long long>(st.st_size),
                     static_cast<long long>(st.st_mtim.tv_sec),
                     static_cast<long long>(st.st_mtim.tv_nsec),
                     std::filesystem::exists(path_ + "-wal", ec) ? 'w' : '-',
                     std::filesystem::exists(path_ + "-shm", ec) ? 's' : '-') +
         std::string(header, got);
}

std::string DashboardDb::data_version() const {
  return file_version(path_) + "/" + file_version(path_ + "-wal");
}

std::string DashboardDb::health() {
  try {
    check_now();
    return {};
  } catch (const results::StoreError& e) {
    return e.what();
  }
}

void DashboardDb::check_now() {
  with_connection([](results::Connection&) { return 0; });
}

DashboardDb::Lease::Lease(DashboardDb& db) : owner(db) {
  signature = owner.current_signature();
  bool checked = false;
  // Connections opened on an earlier state of the file would answer from it (a WAL reader trusts
  // its cache while the -shm index is unchanged; an immutable one always): they go, but only
  // after the new one is open, so that the pool never lets go of the file entirely (an open
  // reader keeps a writer that closes from deleting the -wal and -shm under the next one).
  std::vector<Pooled> stale;
  {
    std::lock_guard<std::mutex> lock(owner.mutex_);
    auto keep = std::stable_partition(owner.idle_.begin(), owner.idle_.end(),
                                      [&](const Pooled& p) { return p.signature == signature; });
    std::move(keep, owner.idle_.end(), std::back_inserter(stale));
    owner.idle_.erase(keep, owner.idle_.end());
    if (!owner.idle_.empty()) {
      connection = std::move(owner.idle_.back().connection);
      owner.idle_.pop_back();
    }
    checked = owner.checked_signature_ == signature;
  }
  if (!connection) connection = open_readonly(owner.path_);
  stale.clear();
  if (!checked) {
    // The file changed since it was last checked (a checkpoint, or another database written over
    // it): it must still be a batchlab database of the schema served.
    const std::int64_t version = check_schema(*connection);
    if (version != owner.schema_version_) {
      throw results::StoreError(owner.path_,
                                fmt::format("schema version {} since the server started with "
                                            "version {}; restart `batchlab serve`",
                                            version, owner.schema_version_));
    }
    std::lock_guard<std::mutex> lock(owner.mutex_);
    owner.checked_signature_ = signature;
  }
}

DashboardDb::Lease::~Lease() {
  // A connection that served a request goes back unless the pool already holds plenty.
  std::lock_guard<std::mutex> lock(owner.mutex_);
  if (owner.idle_.size() < 16) owner.idle_.push_back(Pooled{std::move(connection), signature});
}

}  // namespace batchlab::serve
