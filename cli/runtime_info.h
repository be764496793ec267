// Facts about the process that every run records and `batchlab version` prints: LibTorch version,
// the BLAS library actually loaded, intra-op threads, devices, host and the batchlab git commit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace batchlab::cli {

// Sets LibTorch's intra-op thread count: `requested`, or the hardware concurrency when 0.
// LibTorch 1.13 starts with one thread on a 2-core machine unless OMP_NUM_THREADS is set.
int64_t configure_threads(int64_t requested);

std::string torch_version();
// The BLAS shared library mapped into this process (resolved through Debian's alternatives),
// e.g. ".../openblas-pthread/libblas.so.3"; "none loaded" before the first BLAS call.
std::string blas_library();
std::vector<std::string>
devices();                  // "cpu (2 cores)", "cuda:0 NVIDIA H100 ... (79.1 GiB, sm_90, 132 SMs)"
std::string gpu_support();  // what this build can do on GPUs (CUDA, NCCL)
std::string host_name();
std::string git_sha();  // batchlab's commit at build time ("unknown" outside a checkout)
std::string batchlab_version();
std::string utc_now_iso();  // 2026-11-22T10:00:00Z

}  // namespace batchlab::cli
