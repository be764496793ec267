#include "cli/allocator_tuning.h"

#include <fmt/format.h>

#include <cstdlib>
#include <string_view>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace batchlab::cli {
namespace {

constexpr int kMmapThreshold = 256 << 20;  // tensors below this come from the heap
constexpr int kTrimThreshold = 1 << 30;    // freed heap memory kept up to this size

std::string& description() {
  static std::string text;
  return text;
}

bool user_controls_malloc() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr &&
      std::string_view(tunables).find("glibc.malloc") != std::string_view::npos) {
    return true;
  }
  const char* switch_value = std::getenv("BATCHLAB_MALLOC_TUNING");
  return switch_value != nullptr && std::string_view(switch_value) == "0";
}

}  // namespace

std::string tune_allocator() {
#if defined(__GLIBC__)
  if (user_controls_malloc()) {
    description() = "glibc, as configured by the environment (batchlab's tuning off)";
  } else if (mallopt(M_MMAP_THRESHOLD, kMmapThreshold) == 1 &&
             mallopt(M_TRIM_THRESHOLD, kTrimThreshold) == 1) {
    // Setting either value also switches off glibc's dynamic adjustment of both.
    description() = fmt::format("glibc, mmap threshold {} MiB, trim threshold {} MiB (batchlab)",
                                kMmapThreshold >> 20, kTrimThreshold >> 20);
  } else {
    description() = "glibc defaults (mallopt refused the settings)";
  }
#else
  description() = "not glibc: left as it is";
#endif
  return description();
}

const std::string& allocator_tuning() { return description(); }

}  // namespace batchlab::cli
