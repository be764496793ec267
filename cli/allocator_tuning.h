// glibc malloc settings for a training process, applied once at the start of main().
//
// Why: a training step frees and reallocates the same multi-megabyte activation and gradient
// tensors every step. With glibc's defaults (a dynamic mmap threshold of at most 32 MiB and a trim
// threshold of twice that), freed memory at the top of a heap is regularly handed back to the
// kernel and faulted in again, zero-filled, on the next step. On the spine experiment perf put 12%
// of batchlab's samples in the kernel (exc_page_fault, clear_page_erms) against 6% for the Python
// peer (docs/performance.md); with these settings it is under 1.5%. PyTorch's CPU performance
// guides make the same point by recommending jemalloc or tcmalloc; this keeps glibc's allocator and
// only stops it from returning memory a training loop is about to ask for again.
//
// What it costs: the process keeps up to `trim threshold` of freed memory per malloc arena instead
// of returning it, so its resident size stays near its peak. Allocations above the mmap threshold
// still get their own mapping and are returned when freed.
//
// A user who sets malloc tunables themselves (GLIBC_TUNABLES with a glibc.malloc entry) or sets
// BATCHLAB_MALLOC_TUNING=0 keeps glibc's behaviour as configured.
#pragma once

#include <string>

namespace batchlab::cli {

// Applies the settings unless the environment says otherwise (see above). Returns what was done,
// for `batchlab version`: e.g. "glibc, mmap threshold 256 MiB, trim threshold 1024 MiB (batchlab)".
std::string tune_allocator();

// The description tune_allocator() returned (empty before it ran).
const std::string& allocator_tuning();

}  // namespace batchlab::cli
