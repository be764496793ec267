// `batchlab export --format hf` into a folder it cannot write (issue 45): it made the folder, or
// failed on it, only after reading the run; now the place is tried first (a probe file) and
// refused with exit 2 before the database is opened and before anything is created.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "tests/cli/cli_runner.h"

namespace batchlab::cli {
namespace {

using testing::contains;
using testing::run_batchlab;
using testing::shell_quote;
using testing::TempDir;

std::string export_to(const std::string& out) {
  // No database exists: the folder must be refused before it is looked for.
  return "export --db /nonexistent/batchlab.db --run 0123456789abcdef --format hf --out " +
         shell_quote(out);
}

TEST(ExportHfFolder, AFolderWhereNoFileCanBeCreatedIsRefusedFirst) {
  // /proc takes no new files, for root too (access(2) would have said yes to root).
  const auto proc = run_batchlab(export_to("/proc/batchlab-export-test"));
  EXPECT_EQ(proc.exit_code, 2) << proc.output;
  EXPECT_TRUE(contains(proc.output,
                       "--out /proc/batchlab-export-test: cannot create files in "
                       "/proc"))
      << proc.output;
  EXPECT_FALSE(std::filesystem::exists("/proc/batchlab-export-test"));

  if (::geteuid() == 0) return;  // root writes into a mode-0555 folder
  TempDir dir("export-ro");
  const std::string locked = (dir.path / "locked").string();
  std::filesystem::create_directory(locked);
  ::chmod(locked.c_str(), 0555);
  const auto r = run_batchlab(export_to(locked + "/model"));
  ::chmod(locked.c_str(), 0755);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "cannot create files in " + locked)) << r.output;
  EXPECT_FALSE(std::filesystem::exists(locked + "/model"));
}

}  // namespace
}  // namespace batchlab::cli
