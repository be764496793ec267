// The study databases committed under docs/data are read by the README's and the docs' commands
// (`report`, `serve`, `compare`, `sweep simulate`) straight from the checkout. Each must be at the
// schema version this batchlab writes (`serve` refuses an older one) and in rollback-journal mode
// (reading a WAL-mode file creates -wal and -shm beside it, in the checkout). Read from the file's
// header, without opening it with SQLite (which could change it).
#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <fstream>

#include "results/schema.h"
#include "tests/test_paths.h"

namespace batchlab::results {
namespace {

namespace fs = std::filesystem;

std::array<unsigned char, 100> header_of(const fs::path& path) {
  std::array<unsigned char, 100> header{};
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(header.data()), header.size());
  return header;
}

TEST(CommittedDatabases, AreAtTheCurrentSchemaAndInRollbackJournalMode) {
  const fs::path dir = fs::path(test_paths::source_dir()) / "docs" / "data";
  int seen = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".db") continue;
    ++seen;
    const auto h = header_of(entry.path());
    // Bytes 18 and 19: the file format's write and read versions, 1 for rollback journal, 2 WAL.
    EXPECT_EQ(h[18], 1) << entry.path() << " is in WAL mode: convert it with sqlite3 "
                        << entry.path() << " 'PRAGMA journal_mode=DELETE'";
    EXPECT_EQ(h[19], 1) << entry.path();
    // Bytes 60-63: PRAGMA user_version, big-endian: batchlab's schema version.
    const int64_t version = (int64_t{h[60]} << 24) | (h[61] << 16) | (h[62] << 8) | h[63];
    EXPECT_EQ(version, latest_schema_version())
        << entry.path() << " is at schema " << version << ": `batchlab results migrate --db "
        << entry.path().string() << "` and commit it";
  }
  EXPECT_GE(seen, 3) << "the committed study databases are gone from " << dir;
}

}  // namespace
}  // namespace batchlab::results
