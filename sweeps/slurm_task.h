// One array task of a Slurm submission (`batchlab sweep slurm-task TASKS INDEX`, slurm.h): the job
// in line INDEX of the task list, run by `batchlab train` with its records on the node's own disk
// and published into its run folder on the shared filesystem.
//
// What the task watches while the job runs, and what it costs on the shared filesystem: the job's
// exit (a waitpid), the stop signal (an atomic), and its checkpoint folder, through one stat of the
// folder per look (CheckpointWatch). It publishes a snapshot of the records every
// `snapshot_interval` and as soon as a new checkpoint appears: a job resumed elsewhere resumes
// from no checkpoint its published records do not reach (--records-end), so the closer they
// follow, the less is trained again after a lost node.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "sweeps/run_layout.h"

namespace batchlab::sweeps {

// Tells when a new checkpoint (a `ckpt-*` file) appears in a folder on a shared filesystem,
// cheaply: a look stats the folder, whose modification time changes when a file is created in it,
// renamed into it or removed; the folder is listed only when that time changed. For `settle`
// after a change every look lists it again: where timestamps are coarse (whole seconds on some
// filesystems), a checkpoint renamed in within the same tick as the listing leaves the time as it
// was. A folder that does not exist yet is one without checkpoints.
class CheckpointWatch {
 public:
  explicit CheckpointWatch(std::string folder,
                           std::chrono::milliseconds settle = std::chrono::seconds(2));
  // True when the newest checkpoint differs from the one the last call (or the constructor) found.
  bool changed();
  // The newest checkpoint's file name ("" for none), as last listed.
  const std::string& newest() const { return newest_; }
  // How often the folder was listed (a test's measure of the cost).
  int64_t listings() const { return listings_; }

 private:
  using Clock = std::chrono::steady_clock;
  std::string list_newest();

  std::string folder_;
  std::chrono::milliseconds settle_;
  std::optional<std::filesystem::file_time_type> mtime_;  // the folder's, at the last look
  Clock::time_point settle_until_;
  std::string newest_;
  int64_t listings_ = 0;
};

// One array task: the job in line `index` of `tasks_file`, run by `batchlab train` (by `srun` as
// `ranks` ranks, which meet through SLURM_PROCID/SLURM_NTASKS: core/dist/rendezvous.h; rank 0, on
// this node, keeps the records) with its records in `local_dir` (node-local, removed at the end),
// published into its run folder every `snapshot_interval`, at each new checkpoint and at the end;
// SIGTERM forwarded to the job at the first stop request, SIGKILL at the second (preemption); and
// `<run folder>/stop` as its stop file (a study's race and pruning; sweeps/study/slurm_source.h).
// Returns the job's exit code (128 + the signal when it was killed by one).
int run_slurm_task(const std::string& batchlab, const std::string& tasks_file, size_t index,
                   const std::string& local_dir, std::chrono::seconds snapshot_interval,
                   const std::atomic<int>* stop_requests, int ranks = 1);

}  // namespace batchlab::sweeps
