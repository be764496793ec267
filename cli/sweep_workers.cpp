#include "cli/sweep_workers.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

namespace batchlab::cli {

std::string WorkerChoice::describe() const {
  return fmt::format("{} worker{}: {}", workers, workers == 1 ? "" : "s", reason);
}

int64_t hardware_cores() {
  return std::max<int64_t>(1, static_cast<int64_t>(std::thread::hardware_concurrency()));
}

WorkerChoice choose_workers(std::optional<long long> asked, const sweeps::Plan& plan,
                            size_t devices, int64_t cores) {
  if (asked) return {static_cast<unsigned>(*asked), "as asked (--workers)"};
  if (devices > 0) return {static_cast<unsigned>(devices), "one per device of --devices"};
  // The job with the most threads sets how many fit: workers x threads must not oversubscribe.
  int64_t threads = 1;
  bool all_cores = false;
  bool varied = false;
  for (const auto& job : plan.jobs) {
    if (job.threads <= 0) all_cores = true;
    varied = varied || job.threads != plan.jobs.front().threads;
    threads = std::max(threads, job.threads);
  }
  if (all_cores) {
    return {1, fmt::format("{} cores / train.threads = 0 (each job uses all cores)", cores)};
  }
  const auto workers = static_cast<unsigned>(std::max<int64_t>(1, cores / threads));
  return {workers, fmt::format("{} cores / train.threads = {}{}", cores, threads,
                               varied ? " (the largest of the jobs')" : "")};
}

}  // namespace batchlab::cli
