#include "results/database_file.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <vector>

#include "results/errors.h"
#include "results/query.h"
#include "results/sqlite_util.h"

namespace batchlab::results {
namespace {

namespace fs = std::filesystem;

// The first 16 bytes of every SQLite 3 database file.
constexpr std::array<char, 16> kSqliteHeader = {'S', 'Q', 'L', 'i', 't', 'e', ' ', 'f',
                                                'o', 'r', 'm', 'a', 't', ' ', '3', '\0'};

[[noreturn]] void refuse(const std::string& path, std::string_view role, const std::string& why) {
  throw StoreInputError(path, fmt::format("{} {}", role, why));
}

// A file that does not exist yet: the first existing folder above it must be a folder.
void check_new_file(const std::string& path, std::string_view role) {
  for (fs::path p = fs::path(path).parent_path(); !p.empty(); p = p.parent_path()) {
    std::error_code ec;
    const auto status = fs::status(p, ec);
    if (!fs::exists(status)) continue;
    if (!fs::is_directory(status)) {
      refuse(path, role,
             fmt::format("cannot be created: {} is not a folder; give a path in a folder",
                         p.string()));
    }
    return;
  }
}

bool has_sqlite_header(const std::string& path, std::uintmax_t size) {
  if (size < kSqliteHeader.size()) return false;
  std::array<char, 16> head{};
  std::ifstream in(path, std::ios::binary);
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  return in && head == kSqliteHeader;
}

// The schema version and the tables of a SQLite file, read without writing anything and without
// creating anything beside it: a plain read-only connection to a WAL-mode file would leave an
// empty -wal and a -shm behind, also when the file turns out to be damaged (open_for_reading).
void check_schema(const std::string& path, std::string_view role) {
  Connection db = open_for_reading(path, SQLITE_OPEN_READONLY);
  std::int64_t version = 0;
  std::vector<std::string> tables;
  try {
    // A damaged file (SQLITE_CORRUPT, SQLITE_NOTADB) fails here with a StoreInputError naming it
    // (Connection::fail).
    version = db.pragma_int("user_version");
    Statement stmt(db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
    while (stmt.step()) tables.push_back(stmt.column_text(0));
  } catch (const StoreInputError&) {
    throw;
  } catch (const StoreError&) {
    // Other damage SQLite reports as a plain SQLITE_ERROR ("unsupported file format": a header
    // whose schema format is not one SQLite knows; found by fuzz_ingest) is bad input too; a lock
    // held by another process is not.
    if (is_locked_database(db.last_error_code())) throw;
    refuse(path, role,
           fmt::format("cannot be read as a SQLite database ({}): the file is damaged or not a "
                       "database; give the path of a batchlab database",
                       db.last_message()));
  }
  if (version == 0 && !tables.empty()) {
    refuse(path, role,
           fmt::format("is a SQLite database of another program (no batchlab schema version; "
                       "tables: {}): batchlab would add its own tables to it; give the path of a "
                       "batchlab database, or a new file",
                       fmt::join(tables.begin(),
                                 tables.begin() + std::min<size_t>(tables.size(), 5), ", ")));
  }
}

}  // namespace

void check_database_path(const std::string& path, DatabaseUse use, std::string_view role) {
  if (path.empty() || path == ":memory:" || path.rfind("file:", 0) == 0) return;
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (!fs::exists(status)) {
    if (use != DatabaseUse::kCreateOrOpen) refuse(path, role, "does not exist; check the path");
    check_new_file(path, role);
    return;
  }
  if (fs::is_directory(status)) {
    refuse(path, role,
           fmt::format("is a folder, not a database file; give a file path (e.g. {})",
                       (fs::path(path) / "batchlab.db").string()));
  }
  if (!fs::is_regular_file(status)) {
    refuse(path, role,
           "is not a regular file (a device, pipe or socket), so it cannot hold a database; give "
           "the path of a database file");
  }
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) refuse(path, role, "cannot be read: " + ec.message());
  if (size == 0) return;  // a new, empty database (or a job's records file before its first row)
  if (!has_sqlite_header(path, size)) {
    refuse(path, role,
           use == DatabaseUse::kRecords
               ? "is not a batchlab records file (not a SQLite database at all); give a job's "
                 "records.db or a runs folder holding them"
               : "is not a SQLite database (its first bytes are not SQLite's header), so not a "
                 "batchlab database; check the path, or give a new file");
  }
  check_schema(path, role);
}

}  // namespace batchlab::results
