// Large counts for the console, with SI prefixes: what `batchlab models` and `batchlab bench`
// print for parameter and FLOP counts, in one format.
#pragma once

#include <fmt/format.h>

#include <string>

namespace batchlab::cli {

// 25557032 -> "25.56M"; 8.2e9 -> "8.20G"; 512 -> "512.00".
inline std::string si(double v) {
  const char* units[] = {"", "K", "M", "G", "T", "P"};
  int u = 0;
  while (v >= 1000.0 && u < 5) {
    v /= 1000.0;
    ++u;
  }
  return fmt::format("{:.2f}{}", v, units[u]);
}

}  // namespace batchlab::cli
