#include "sweeps/slurm_task.h"

#include <fmt/format.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <thread>
#include <vector>

#include "core/errors.h"
#include "results/errors.h"
#include "results/ingest.h"
#include "results/rows.h"
#include "results/store.h"
#include "sweeps/process.h"
#include "sweeps/slurm.h"
#include "sweeps/task_list.h"

namespace batchlab::sweeps {

namespace fs = std::filesystem;

CheckpointWatch::CheckpointWatch(std::string folder, std::chrono::milliseconds settle)
    : folder_(std::move(folder)), settle_(settle) {
  changed();  // what is there at the start is not new
}

bool CheckpointWatch::changed() {
  const auto now = Clock::now();
  std::error_code ec;
  const auto time = fs::last_write_time(folder_, ec);
  const std::optional<fs::file_time_type> seen =
      ec ? std::nullopt : std::optional<fs::file_time_type>(time);
  if (seen != mtime_ || listings_ == 0) {
    mtime_ = seen;
    settle_until_ = now + settle_;
  } else if (now >= settle_until_) {
    return false;  // unchanged, and long enough ago to trust the timestamp
  }
  const std::string newest = list_newest();
  if (newest == newest_) return false;
  newest_ = newest;
  return true;
}

std::string CheckpointWatch::list_newest() {
  ++listings_;
  std::error_code ec;
  std::string newest;
  for (const auto& e : fs::directory_iterator(folder_, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("ckpt-", 0) == 0 && name > newest) newest = name;
  }
  return newest;
}

namespace {

// The task's job: its run folder (line `index` of the task list) and where its records go.
struct TaskJob {
  fs::path run_dir;
  std::string run_id;
  RunLayout layout;
  std::string shared;       // the published records, in the run folder
  std::string local;        // the job's own records, on the node
  std::string checkpoints;  // in the run folder: a preempted task resumes wherever it runs next
};

TaskJob task_job(const std::string& tasks_file, size_t index, const std::string& local_dir) {
  const TaskLine task = read_task_line(tasks_file, index);  // sweeps/task_list.h
  const fs::path run_dir = task.run_dir;
  const std::string& run_id = task.run_id;
  const RunLayout layout(run_dir.parent_path().string());
  return {run_dir,
          run_id,
          layout,
          layout.records_path(run_id),
          (fs::path(local_dir) / "records.db").string(),
          (run_dir / "checkpoints" / run_id).string()};
}

// Copies the published records to the node (earlier attempts' rows continue in the new one) and
// says how far they reach: the job resumes from no checkpoint past it. Checkpoints go straight to
// the shared folder, records only with the next snapshot, so a node lost in between leaves
// checkpoints ahead of the records; resuming from one would leave steps unrecorded.
int64_t bring_records_local(const TaskJob& job, const std::string& local_dir) {
  fs::create_directories(local_dir);
  std::error_code ec;
  if (fs::exists(job.shared, ec)) {
    fs::copy_file(job.shared, job.local, fs::copy_options::overwrite_existing);
  }
  if (!fs::exists(job.local, ec)) return 0;
  try {
    return results::Store(job.local).updates_recorded(job.run_id);
  } catch (const results::StoreError&) {
    return 0;  // unreadable: start over rather than leave a gap
  }
}

void log_task_start(const TaskJob& job, size_t index) {
  std::ofstream log(job.layout.log_path(job.run_id), std::ios::app);
  const char* slurm_job = std::getenv("SLURM_JOB_ID");
  const char* host = std::getenv("HOSTNAME");
  log << fmt::format("=== batchlab sweep slurm task {} (Slurm job {}) on {} at {} ===\n", index,
                     slurm_job != nullptr ? slurm_job : "?", host != nullptr ? host : "?",
                     results::utc_now());
}

// `batchlab train` for the job; with several ranks srun starts them in this job's allocation (each
// gets SLURM_PROCID), and one failing ends the others.
ChildProcess start_train(const std::string& batchlab, const TaskJob& job, int64_t records_end,
                         int ranks) {
  SpawnOptions spawn;
  if (ranks > 1) {
    spawn.argv = {program_on_path("srun"), fmt::format("--ntasks={}", ranks),
                  "--kill-on-bad-exit=1"};
  }
  const std::vector<std::string> train = {batchlab,
                                          "train",
                                          job.layout.config_path(job.run_id),
                                          "--run-id",
                                          job.run_id,
                                          "--db",
                                          job.local,
                                          "--checkpoint-dir",
                                          job.checkpoints,
                                          "--stop-file",
                                          job.layout.stop_path(job.run_id),
                                          "--records-end",
                                          std::to_string(records_end)};
  spawn.argv.insert(spawn.argv.end(), train.begin(), train.end());
  spawn.log_path = job.layout.log_path(job.run_id);
  spawn.parent_death_signal = SIGTERM;
  return ChildProcess::spawn(spawn);
}

void publish(const TaskJob& job) {
  std::error_code ec;
  if (!fs::exists(job.local, ec)) return;
  try {
    results::snapshot_database(job.local, job.shared);
  } catch (const results::StoreError&) {
    // The job may be creating its file; the next snapshot (or the final one) publishes it.
  }
}

// Until the job ends: stop requests passed on as signals, snapshots published on time and at each
// new checkpoint. Returns the job's exit status and the stop level it was signalled at (0: none).
std::pair<ExitStatus, int> supervise(ChildProcess& child, const TaskJob& job,
                                     std::chrono::seconds snapshot_interval,
                                     const std::atomic<int>* stop_requests) {
  CheckpointWatch checkpoints(job.checkpoints);
  int signalled = 0;
  auto next = std::chrono::steady_clock::now() + snapshot_interval;
  std::optional<ExitStatus> status;
  while (!(status = child.poll())) {
    const int level = stop_requests != nullptr ? stop_requests->load() : 0;
    if (level > signalled) {
      signalled = level;
      child.send(level == 1 ? SIGTERM : SIGKILL);
    }
    if (checkpoints.changed() || std::chrono::steady_clock::now() >= next) {
      publish(job);
      next = std::chrono::steady_clock::now() + snapshot_interval;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return {*status, signalled};
}

// The job's records end with its outcome as this task saw it: a job that ended before opening
// them gets a record of why (for `sweep status`); one still `running` is preempted or crashed.
void close_records(const TaskJob& job, const ExitStatus& status, int signalled) {
  std::error_code ec;
  if (!fs::exists(job.local, ec) && !status.ok()) {
    results::Store store(job.local);
    results::RunRow row;
    row.run_id = job.run_id;
    row.status = std::string(results::run_status::kFailed);
    row.error = fmt::format("ended before recording anything ({}): {}", status.describe(),
                            tail_lines(job.layout.log_path(job.run_id), 1));
    store.upsert_run(row);
  } else if (fs::exists(job.local, ec)) {
    results::finalize_record(
        job.local, job.run_id,
        signalled > 0 ? results::run_status::kPreempted : results::run_status::kFailed,
        signalled > 0 ? "stopped by Slurm (SIGTERM)" : "crashed: " + status.describe());
  }
}

}  // namespace

int run_slurm_task(const std::string& batchlab, const std::string& tasks_file, size_t index,
                   const std::string& local_dir, std::chrono::seconds snapshot_interval,
                   const std::atomic<int>* stop_requests, int ranks) {
  const TaskJob job = task_job(tasks_file, index, local_dir);
  const int64_t records_end = bring_records_local(job, local_dir);
  log_task_start(job, index);
  ChildProcess child = start_train(batchlab, job, records_end, ranks);
  const auto [status, signalled] = supervise(child, job, snapshot_interval, stop_requests);
  close_records(job, status, signalled);
  publish(job);
  std::error_code ec;
  fs::remove_all(local_dir, ec);
  return status.signaled ? 128 + status.code : status.code;
}

}  // namespace batchlab::sweeps
