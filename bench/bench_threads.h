// The `--threads=N` flag the LibTorch benches share: taken out of argv before Google Benchmark sees
// it (which rejects flags it does not know), then applied with at::set_num_threads. LibTorch's
// default thread count differs between builds and machines, so every comparison states its own.
#pragma once

#include <ATen/Parallel.h>

#include <cstdlib>
#include <cstring>
#include <vector>

namespace batchlab::bench {

// Removes --threads=N from argv (argc updated), sets the intra-op threads and returns N.
inline int take_threads_flag(int& argc, char** argv, int default_threads = 2) {
  int threads = default_threads;
  int kept = 0;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0) {
      threads = std::atoi(argv[i] + 10);
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  at::set_num_threads(threads);
  return threads;
}

}  // namespace batchlab::bench
