// cli/allocator_tuning.h: the malloc settings take effect in-process, `batchlab version` reports
// them, and the environment switches them off.
#include "cli/allocator_tuning.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "tests/cli/cli_runner.h"

namespace batchlab::cli {
namespace {

using testing::run_batchlab;

#if defined(__GLIBC__)
// Bytes glibc currently holds in separate mmap()ed chunks.
size_t mmapped_bytes() { return mallinfo2().hblkhd; }

TEST(AllocatorTuning, A64MiBBlockComesFromTheHeapOnceTuned) {
  unsetenv("BATCHLAB_MALLOC_TUNING");
  unsetenv("GLIBC_TUNABLES");
  // glibc's dynamic mmap threshold never exceeds 32 MiB, so without the tuning a 64 MiB block is
  // always a separate mapping (and is unmapped, its pages returned, when freed).
  const std::string text = tune_allocator();
  EXPECT_NE(text.find("mmap threshold 256 MiB"), std::string::npos) << text;
  const size_t before = mmapped_bytes();
  void* block = std::malloc(size_t{64} << 20);
  ASSERT_NE(block, nullptr);
  const size_t during = mmapped_bytes();
  std::free(block);
  EXPECT_EQ(during, before) << "the 64 MiB block was mmap()ed: the threshold was not applied";
}
#endif

TEST(AllocatorTuning, VersionReportsTheSettingAndTheEnvironmentTurnsItOff) {
  unsetenv("BATCHLAB_MALLOC_TUNING");
  auto tuned = run_batchlab("version");
  ASSERT_EQ(tuned.exit_code, 0) << tuned.output;
#if defined(__GLIBC__)
  EXPECT_NE(tuned.output.find("malloc glibc, mmap threshold 256 MiB, trim threshold 1024 MiB"),
            std::string::npos)
      << tuned.output;
  setenv("BATCHLAB_MALLOC_TUNING", "0", 1);
  auto off = run_batchlab("version");
  unsetenv("BATCHLAB_MALLOC_TUNING");
  EXPECT_NE(off.output.find("as configured by the environment"), std::string::npos) << off.output;
  setenv("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=1048576", 1);
  auto user = run_batchlab("version");
  unsetenv("GLIBC_TUNABLES");
  EXPECT_NE(user.output.find("as configured by the environment"), std::string::npos) << user.output;
#endif
}

}  // namespace
}  // namespace batchlab::cli
