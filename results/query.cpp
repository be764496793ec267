#include "results/query.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "results/errors.h"
#include "results/sqlite_util.h"

namespace batchlab::results {

namespace {

// Refuses ATTACH/DETACH while statements are prepared: sqlite3_stmt_readonly() counts them as
// read-only (they change the connection, not the file), yet ATTACH would open another file.
int authorize(void* user, int action, const char*, const char*, const char*, const char*) {
  if (action == SQLITE_ATTACH || action == SQLITE_DETACH) {
    *static_cast<int*>(user) = action;
    return SQLITE_DENY;
  }
  return SQLITE_OK;
}

std::string excerpt(std::string_view sql) {
  constexpr std::size_t kMax = 60;
  std::string text(sql.substr(0, kMax));
  for (char& c : text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  if (sql.size() > kMax) text += "...";
  return text;
}

std::string real_text(double value) {
  std::string text = fmt::format("{}", value);
  // Keep a REAL recognizable as one ("1.0", not "1") in every format.
  if (text.find_first_of(".eE") == std::string::npos && text.find("inf") == std::string::npos &&
      text.find("nan") == std::string::npos) {
    text += ".0";
  }
  return text;
}

std::string hex(const void* data, int size) {
  static const char kDigits[] = "0123456789abcdef";
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::string text;
  text.reserve(static_cast<std::size_t>(size) * 2);
  for (int i = 0; i < size; ++i) {
    text += kDigits[bytes[i] >> 4];
    text += kDigits[bytes[i] & 0xf];
  }
  return text;
}

// Errors SQLite reports about the statement itself (syntax, unknown table or column, a function
// misused) are the user's, and so is a damaged file (corrupt, or no database at all); the rest
// (locks, I/O) are the system's.
[[noreturn]] void fail(const Connection& db, const std::string& context) {
  const int code = db.last_error_code();
  // A damaged file is no mistake in the SQL: name the file and what to do about it.
  if (is_damaged_database(code)) {
    throw StoreInputError(db.path(), damaged_database_context("found while reading it"),
                          db.last_message());
  }
  // A lock held past the busy timeout is no mistake in the SQL either, and no bad input: the
  // same command succeeds once the other process is done (exit 1, README "Exit codes").
  if (is_locked_database(code)) {
    throw StoreError(db.path(), locked_database_context(db.path(), "while reading it"),
                     db.last_message());
  }
  if (code == SQLITE_ERROR || code == SQLITE_AUTH || code == SQLITE_MISMATCH ||
      code == SQLITE_RANGE || code == SQLITE_TOOBIG) {
    throw StoreInputError(db.path(), context, db.last_message());
  }
  throw StoreError(db.path(), context, db.last_message());
}

void bind_all(const Connection& db, sqlite3_stmt* stmt, const std::vector<QueryParam>& params,
              std::string_view sql) {
  const int expected = sqlite3_bind_parameter_count(stmt);
  if (expected != static_cast<int>(params.size())) {
    throw StoreInputError(db.path(), fmt::format("`{}` has {} parameter(s), {} value(s) given",
                                                 excerpt(sql), expected, params.size()));
  }
  for (int i = 0; i < expected; ++i) {
    const auto& p = params[static_cast<size_t>(i)];
    int rc = SQLITE_OK;
    if (const auto* text = std::get_if<std::string>(&p)) {
      rc = sqlite3_bind_text(stmt, i + 1, text->data(), static_cast<int>(text->size()),
                             SQLITE_TRANSIENT);
    } else if (const auto* integer = std::get_if<std::int64_t>(&p)) {
      rc = sqlite3_bind_int64(stmt, i + 1, *integer);
    } else {
      rc = sqlite3_bind_double(stmt, i + 1, std::get<double>(p));
    }
    if (rc != SQLITE_OK) fail(db, fmt::format("cannot bind parameter {}", i + 1));
  }
}

// "file:" URI of a path: %, ? and # (and anything outside printable ASCII) percent-encoded.
std::string file_uri(const std::string& path) {
  std::error_code ec;
  std::string absolute = std::filesystem::absolute(path, ec).lexically_normal().string();
  if (ec) absolute = path;
  std::string uri = "file:";
  for (const char c : absolute) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '%' || c == '?' || c == '#' || u <= 0x20 || u >= 0x7f) {
      uri += fmt::format("%{:02X}", u);
    } else {
      uri += c;
    }
  }
  return uri;
}

}  // namespace

bool opens_immutable(const std::string& db_path) {
  // Bytes 18 and 19 of the header (file format write and read versions) are 2 in WAL mode.
  char header[20] = {};
  std::ifstream in(db_path, std::ios::binary);
  if (!in.read(header, sizeof header)) return false;
  if (std::string_view(header, 16) != std::string_view("SQLite format 3\0", 16)) return false;
  if (header[18] != 2 && header[19] != 2) return false;
  std::error_code ec;
  return !std::filesystem::exists(db_path + "-wal", ec) &&
         !std::filesystem::exists(db_path + "-shm", ec);
}

Connection open_for_reading(const std::string& db_path, int flags) {
  if (opens_immutable(db_path)) {
    return Connection(db_path, flags, file_uri(db_path) + "?immutable=1");
  }
  return Connection(db_path, flags);
}

QueryResult query_readonly(const std::string& db_path, const std::string& sql) {
  return query_readonly(db_path, sql, {});
}

QueryResult query_readonly(const std::string& db_path, const std::string& sql,
                           const std::vector<QueryParam>& params) {
  return query_readonly(db_path, sql, params, kReadBusyTimeout);
}

QueryResult query_readonly(const std::string& db_path, const std::string& sql,
                           const std::vector<QueryParam>& params,
                           std::chrono::milliseconds busy_timeout) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(db_path, ec)) {
    throw StoreInputError(db_path, "no database file here");
  }
  Connection db = open_for_reading(db_path, SQLITE_OPEN_READONLY);
  sqlite3_busy_timeout(db.get(), static_cast<int>(busy_timeout.count()));
  // Second guard beside SQLITE_OPEN_READONLY: refuse writes even to the temp database.
  db.exec("PRAGMA query_only = 1", "cannot make the connection query-only");
  int denied = 0;
  sqlite3_set_authorizer(db.get(), authorize, &denied);

  sqlite3_stmt* raw = nullptr;
  const char* tail = nullptr;
  int rc = sqlite3_prepare_v2(db.get(), sql.c_str(), static_cast<int>(sql.size()), &raw, &tail);
  // Owns the statement however this function is left.
  std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> stmt(raw, sqlite3_finalize);
  if (denied != 0) {
    throw StoreInputError(db_path, fmt::format("{} is not allowed in a read-only query",
                                               denied == SQLITE_ATTACH ? "ATTACH" : "DETACH"));
  }
  if (rc != SQLITE_OK) fail(db, fmt::format("invalid SQL `{}`", excerpt(sql)));
  if (!stmt) throw StoreInputError(db_path, "no SQL statement given");

  // A tail that prepares to a statement (not just whitespace or comments) is a second statement.
  if (tail != nullptr && *tail != '\0') {
    sqlite3_stmt* next = nullptr;
    rc = sqlite3_prepare_v2(db.get(), tail, -1, &next, nullptr);
    sqlite3_finalize(next);
    if (rc != SQLITE_OK || next != nullptr) {
      throw StoreInputError(db_path,
                            fmt::format("only one SQL statement is allowed; found more "
                                        "after `{}`",
                                        excerpt(std::string_view(sql).substr(
                                            0, static_cast<std::size_t>(tail - sql.c_str())))));
    }
  }
  if (sqlite3_stmt_readonly(stmt.get()) == 0) {
    throw StoreInputError(db_path, fmt::format("`{}` could modify the database; only read-only "
                                               "statements (SELECT, WITH ... SELECT, EXPLAIN) are "
                                               "allowed",
                                               excerpt(sql)));
  }

  if (!params.empty()) bind_all(db, stmt.get(), params, sql);

  QueryResult result;
  const int ncols = sqlite3_column_count(stmt.get());
  for (int c = 0; c < ncols; ++c) {
    const char* name = sqlite3_column_name(stmt.get(), c);
    result.columns.emplace_back(name != nullptr ? name : "");
  }
  while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
    auto& cells = result.rows.emplace_back();
    auto& types = result.types.emplace_back();
    cells.reserve(static_cast<std::size_t>(ncols));
    types.reserve(static_cast<std::size_t>(ncols));
    for (int c = 0; c < ncols; ++c) {
      switch (sqlite3_column_type(stmt.get(), c)) {
        case SQLITE_INTEGER:
          cells.emplace_back(std::to_string(sqlite3_column_int64(stmt.get(), c)));
          types.push_back(ValueType::kInteger);
          break;
        case SQLITE_FLOAT:
          cells.emplace_back(real_text(sqlite3_column_double(stmt.get(), c)));
          types.push_back(ValueType::kReal);
          break;
        case SQLITE_TEXT: {
          const auto* text = sqlite3_column_text(stmt.get(), c);
          const int size = sqlite3_column_bytes(stmt.get(), c);
          cells.emplace_back(
              std::string(reinterpret_cast<const char*>(text), static_cast<std::size_t>(size)));
          types.push_back(ValueType::kText);
          break;
        }
        case SQLITE_BLOB: {
          const void* data = sqlite3_column_blob(stmt.get(), c);
          cells.emplace_back(hex(data, sqlite3_column_bytes(stmt.get(), c)));
          types.push_back(ValueType::kBlob);
          break;
        }
        default:
          cells.emplace_back(std::nullopt);
          types.push_back(ValueType::kNull);
          break;
      }
    }
  }
  if (rc != SQLITE_DONE) fail(db, fmt::format("query `{}` failed", excerpt(sql)));
  return result;
}

}  // namespace batchlab::results
