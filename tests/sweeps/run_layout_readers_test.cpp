// What sweeps/run_layout.h reads back from a runs folder other processes write too: a lock's
// description (into messages, terminals and JSON) and an existing config.toml (issue 45).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "sweeps/run_layout.h"
#include "tests/temp_dir.h"

namespace batchlab::sweeps {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Before, the whole file was read and returned as it was: escape sequences went to the terminal,
// bytes that are not UTF-8 into JSON, and a file of gigabytes into memory.
TEST(RunLayoutReaders, ALockDescriptionIsBoundedAndPrintable) {
  test_support::TempDir dir("layout");
  const std::string path = (dir.path / "coordinator.lock").string();
  std::ofstream(path, std::ios::binary) << "pid 7: \x1b[2Jsweep \xb0run\n";
  EXPECT_EQ(lock_description(path), "pid 7: ?[2Jsweep ?run");
  std::ofstream(path, std::ios::binary | std::ios::trunc) << std::string(10'000'000, 'x');
  const std::string long_text = lock_description(path);
  EXPECT_EQ(long_text, std::string(kMaxLockDescription, 'x') + "...");
  EXPECT_EQ(lock_description((dir.path / "missing").string()), "");
}

TEST(RunLayoutReaders, AConfigOfAnotherSizeIsReplacedWithoutBeingRead) {
  test_support::TempDir dir("layout");
  const RunLayout layout(dir.path.string());
  const std::string canonical = "schema_version = 1\n";
  std::filesystem::create_directories(layout.dir("r1"));
  std::ofstream(layout.config_path("r1"), std::ios::binary) << std::string(5'000'000, '#');
  layout.write_config("r1", canonical);
  EXPECT_EQ(read_all(layout.config_path("r1")), canonical);
  // Same size, other bytes: replaced too; the same bytes: kept.
  std::ofstream(layout.config_path("r1"), std::ios::binary | std::ios::trunc)
      << "schema_version = 2\n";
  layout.write_config("r1", canonical);
  EXPECT_EQ(read_all(layout.config_path("r1")), canonical);
  const auto before = std::filesystem::last_write_time(layout.config_path("r1"));
  layout.write_config("r1", canonical);
  EXPECT_EQ(std::filesystem::last_write_time(layout.config_path("r1")), before);
}

}  // namespace
}  // namespace batchlab::sweeps
