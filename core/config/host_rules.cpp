#include "core/config/host_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "core/config/canonical.h"

namespace batchlab::config {

namespace {

// The rule for `threads` intra-op threads asked for under `key` (train.threads, --threads).
std::vector<Diagnostic> thread_warnings(const std::string& key, int64_t threads, const Host& host) {
  std::vector<Diagnostic> out;
  const int64_t processes = std::max<int64_t>(1, host.processes);
  if (host.cores <= 0 || threads <= 0) return out;
  // Written without threads x processes, which a config could make overflow.
  const int64_t most = std::max<int64_t>(1, kThreadsPerCore * host.cores / processes);
  if (threads <= most) return out;
  Diagnostic d;
  d.key = key;
  d.value = format_integer(threads);
  d.rule = fmt::format(
      "more than {} x the {} cores of this machine{}: LibTorch runs one OS thread per intra-op "
      "thread, so the threads take turns on the cores and every step slows down; use at most "
      "{}, or 0 for {} (a warning, not an error: the same configuration may run on a machine with "
      "more cores)",
      kThreadsPerCore, host.cores,
      processes > 1 ? fmt::format(" shared by the {} processes of this job", processes) : "", most,
      processes > 1 ? "each process's share of the cores" : "one per core");
  out.push_back(std::move(d));
  return out;
}

}  // namespace

std::vector<Diagnostic> host_warnings(const ExperimentConfig& config, const Host& host) {
  return thread_warnings("train.threads", config.train.threads, host);
}

std::vector<Diagnostic> bench_host_warnings(const BenchConfig& bench, const Host& host) {
  return thread_warnings("--threads", bench.threads, host);
}

}  // namespace batchlab::config
