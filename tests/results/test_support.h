// Helpers shared by the results tests: a scratch folder per test and raw SQLite access that
// bypasses Store, so tests check what is really in the file.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace batchlab::results::testing {

// Writes garbage over every page of the SQLite file `db` but the first (the header and the root of
// the schema): a file that still opens as a database and fails on its first real query.
inline void corrupt_all_but_first_page(const std::string& db) {
  const auto size = std::filesystem::file_size(db);
  ASSERT_GT(size, 4u * 4096u) << db << " is too small to corrupt past its first page";
  std::fstream file(db, std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(4096);
  const std::string garbage(size - 4096, '\xab');
  file.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
}

// A fresh folder under the system temp dir, removed with the fixture.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = info != nullptr ? std::string(info->test_suite_name()) + "_" + info->name()
                                       : std::string("results");
    for (char& c : name) {
      if (c == '/') c = '_';
    }
    path_ =
        std::filesystem::temp_directory_path() / ("batchlab_results_" + std::to_string(::getpid()) +
                                                  "_" + std::to_string(counter++) + "_" + name);
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// A raw connection for inspecting or preparing files outside Store.
class RawDb {
 public:
  explicit RawDb(const std::string& path, int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) {
    if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
      std::string message = sqlite3_errmsg(db_);
      sqlite3_close(db_);
      throw std::runtime_error("cannot open " + path + ": " + message);
    }
    sqlite3_busy_timeout(db_, 30000);
  }
  ~RawDb() { sqlite3_close_v2(db_); }
  RawDb(const RawDb&) = delete;
  RawDb& operator=(const RawDb&) = delete;

  void exec(const std::string& sql) {
    char* message = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
      std::string text = message != nullptr ? message : "?";
      sqlite3_free(message);
      throw std::runtime_error("`" + sql + "` failed: " + text);
    }
  }

  // Every row of a query, each cell as text (nullopt for NULL).
  std::vector<std::vector<std::optional<std::string>>> rows(const std::string& sql) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
      throw std::runtime_error("`" + sql + "`: " + sqlite3_errmsg(db_));
    }
    std::vector<std::vector<std::optional<std::string>>> out;
    int rc = SQLITE_OK;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      auto& row = out.emplace_back();
      for (int c = 0; c < sqlite3_column_count(stmt); ++c) {
        if (sqlite3_column_type(stmt, c) == SQLITE_NULL) {
          row.emplace_back(std::nullopt);
        } else {
          row.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(stmt, c)));
        }
      }
    }
    sqlite3_finalize(stmt);
    if (rc != SQLITE_DONE) throw std::runtime_error("`" + sql + "`: " + sqlite3_errmsg(db_));
    return out;
  }

  // The single value of a one-row, one-column query.
  std::optional<std::string> value(const std::string& sql) {
    auto r = rows(sql);
    if (r.size() != 1 || r[0].size() != 1) throw std::runtime_error("`" + sql + "`: not one value");
    return r[0][0];
  }
  long long integer(const std::string& sql) { return std::stoll(value(sql).value()); }

  sqlite3* get() const { return db_; }

 private:
  sqlite3* db_ = nullptr;
};

}  // namespace batchlab::results::testing
