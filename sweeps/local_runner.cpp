#include "sweeps/local_runner.h"

#include <fmt/format.h>

#include <csignal>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <thread>

#include "results/errors.h"
#include "results/ingest.h"
#include "results/rows.h"
#include "sweeps/process.h"

namespace batchlab::sweeps {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Running {
  size_t job = 0;
  size_t worker = 0;
  int attempt = 1;
  ChildProcess process;
  FileLock lock;
  Clock::time_point started;
};

bool exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

class Runner {
 public:
  Runner(const Plan& plan, SweepRecords& records, const RunLayout& layout,
         const LocalRunOptions& options, RunObserver& observer)
      : plan_(plan), records_(records), layout_(layout), options_(options), observer_(observer) {
    slots_.resize(std::max(1u, options.workers));
  }

  RunSummary run() {
    records_.reconcile(plan_);
    const auto known = records_.runs();
    for (size_t i = 0; i < plan_.jobs.size(); ++i) {
      auto it = known.find(plan_.jobs[i].run_id);
      if (it != known.end() && is_settled(it->second.status)) {
        ++summary_.settled;
        continue;
      }
      if (it != known.end()) attempts_[i] = it->second.attempts.value_or(0);
      queue_.push_back(i);
    }
    summary_.queued = queue_.size();
    auto next_progress = Clock::now() + options_.progress_interval;
    while (true) {
      handle_stop_requests();
      bool busy = false;
      for (auto& slot : slots_) {
        if (!slot) continue;
        if (auto status = slot->process.poll()) {
          Running finished = std::move(*slot);
          slot.reset();
          finish(finished, *status);
        } else {
          busy = true;
        }
      }
      if (stop_level_ == 0) busy = fill_idle_slots() || busy;
      if (!busy && (queue_.empty() || stop_level_ > 0)) break;
      if (Clock::now() >= next_progress) {
        fold_progress();
        next_progress = Clock::now() + options_.progress_interval;
      }
      std::this_thread::sleep_for(options_.poll_interval);
    }
    return summary_;
  }

 private:
  void handle_stop_requests() {
    const int level = options_.stop_requests != nullptr ? options_.stop_requests->load() : 0;
    if (level <= stop_level_) return;
    stop_level_ = level;
    summary_.stopped = true;
    observer_.stopping(level);
    for (auto& slot : slots_) {
      if (slot) slot->process.send(level == 1 ? SIGTERM : SIGKILL);
    }
  }

  // Starts queued jobs on idle workers; true when something runs afterwards. A job whose lock is
  // held (a process of an earlier, killed coordinator still winding down) waits in the queue.
  bool fill_idle_slots() {
    bool any = false;
    for (size_t w = 0; w < slots_.size(); ++w) {
      if (slots_[w]) {
        any = true;
        continue;
      }
      for (auto it = queue_.begin(); it != queue_.end();) {
        const size_t job = *it;
        auto lock = FileLock::try_acquire(layout_.lock_path(plan_.jobs[job].run_id));
        if (!lock) {
          ++it;
          continue;
        }
        it = queue_.erase(it);
        if (start(job, w, std::move(*lock))) {
          any = true;
          break;
        }
      }
    }
    return any;
  }

  // With the job's lock held: settles what an earlier process left behind, then starts the job.
  // False when the job turned out to be settled already.
  bool start(size_t job_index, size_t worker, FileLock lock) {
    const Job& job = plan_.jobs[job_index];
    if (auto folded = fold_leftover(records_, layout_, job.run_id);
        folded && is_settled(folded->status)) {
      ++summary_.settled;
      --summary_.queued;
      return false;
    }
    const int attempt = static_cast<int>(++attempts_[job_index]);
    AttemptSpec spec{&job, worker, attempt, {}};
    Running r{
        job_index,       worker,
        attempt,         spawn_attempt(records_, layout_, options_, plan_.sweep_name, spec, lock),
        std::move(lock), Clock::now()};
    JobEvent event;
    event.job = &job;
    event.worker = worker;
    event.attempt = attempt;
    event.status = std::string(results::run_status::kRunning);
    observer_.started(event);
    slots_[worker] = std::move(r);
    return true;
  }

  void finish(Running& r, const ExitStatus& exit) {
    const Job& job = plan_.jobs[r.job];
    const bool stopping = stop_level_ > 0;
    JobEvent event;
    event.job = &job;
    event.worker = r.worker;
    event.attempt = r.attempt;
    event.seconds = std::chrono::duration<double>(Clock::now() - r.started).count();
    settle_attempt(records_, layout_, job, exit, stopping, event);
    const bool bad_input = !exit.signaled && exit.code == 2;
    if (is_rerunnable(event.status) && !stopping && !bad_input &&
        crashes_[r.job] < options_.retries) {
      ++crashes_[r.job];
      event.retry = true;
      queue_.push_back(r.job);
    } else if (event.status == results::run_status::kDone ||
               event.status == results::run_status::kStopped) {
      ++summary_.done;  // a stop request honoured is a result too
    } else if (event.status == results::run_status::kDiverged) {
      ++summary_.diverged;
    } else if (event.status == results::run_status::kPreempted) {
      ++summary_.preempted;
    } else {
      ++summary_.failed;
    }
    observer_.finished(event);
  }

  // Running jobs' status and step count (not their rows) go into the sweep database, so that
  // `sweep status` shows progress.
  void fold_progress() {
    for (auto& slot : slots_) {
      if (!slot) continue;
      try {
        records_.ingest(plan_.jobs[slot->job].run_id, slot->attempt, /*series=*/false);
      } catch (const results::StoreError&) {
        // A records file the job is still creating; the next round or the final fold gets it.
      }
    }
  }

  const Plan& plan_;
  SweepRecords& records_;
  const RunLayout& layout_;
  const LocalRunOptions& options_;
  RunObserver& observer_;
  RunSummary summary_;
  std::deque<size_t> queue_;
  std::vector<std::optional<Running>> slots_;
  std::map<size_t, int64_t> attempts_;
  std::map<size_t, int> crashes_;
  int stop_level_ = 0;
};

}  // namespace

bool is_rerunnable(const std::string& status) {
  return status == results::run_status::kFailed || status == results::run_status::kPreempted;
}

std::optional<results::IngestedRun> fold_leftover(SweepRecords& records, const RunLayout& layout,
                                                  const std::string& run_id) {
  const std::string path = layout.records_path(run_id);
  if (!exists(path)) return std::nullopt;
  results::finalize_record(path, run_id, results::run_status::kPreempted,
                           "interrupted: its process ended without recording an outcome");
  return records.ingest(run_id, std::nullopt);
}

ChildProcess spawn_attempt(SweepRecords& records, const RunLayout& layout,
                           const LocalRunOptions& options, const std::string& sweep_name,
                           const AttemptSpec& attempt, const FileLock& lock) {
  const Job& job = *attempt.job;
  layout.write_config(job.run_id, job.config_toml);
  {
    std::ofstream log(layout.log_path(job.run_id), std::ios::app);
    log << fmt::format(
        "=== batchlab sweep {}: attempt {} on worker {}{} at {} ===\n", sweep_name, attempt.attempt,
        attempt.worker,
        options.devices.empty() ? "" : " (device " + options.devices[attempt.worker] + ")",
        results::utc_now());
  }
  results::RunRow row;
  row.run_id = job.run_id;
  row.sweep_id = records.sweep_id();
  row.status = std::string(results::run_status::kRunning);
  row.attempts = attempt.attempt;
  records.store().upsert_run(row);

  SpawnOptions spawn;
  spawn.argv = {options.batchlab, "train", layout.config_path(job.run_id), "--run-id",
                job.run_id,       "--db",  layout.records_path(job.run_id)};
  spawn.argv.insert(spawn.argv.end(), attempt.extra_args.begin(), attempt.extra_args.end());
  if (!options.devices.empty()) {
    spawn.env.emplace_back("CUDA_VISIBLE_DEVICES", options.devices[attempt.worker]);
  }
  spawn.log_path = layout.log_path(job.run_id);
  spawn.keep_fd = lock.fd();
  spawn.parent_death_signal = SIGTERM;
  return ChildProcess::spawn(spawn);
}

void settle_attempt(SweepRecords& records, const RunLayout& layout, const Job& job,
                    const ExitStatus& exit, bool stopping, JobEvent& event) {
  const bool bad_input = !exit.signaled && exit.code == 2;
  const std::string path = layout.records_path(job.run_id);
  if (exists(path)) {
    results::finalize_record(
        path, job.run_id, stopping ? results::run_status::kPreempted : results::run_status::kFailed,
        stopping ? "stopped by the sweep coordinator" : "crashed: " + exit.describe());
  }
  event.exit = exit.describe();
  if (auto folded = records.ingest(job.run_id, event.attempt)) {
    event.status = folded->status;
    event.error = folded->error.value_or("");
    return;
  }
  // The process ended before it opened its records file (bad input, or a crash while loading).
  event.status =
      std::string(stopping ? results::run_status::kPreempted : results::run_status::kFailed);
  event.error =
      fmt::format("{} before recording anything ({}): {}", bad_input ? "invalid input" : "ended",
                  exit.describe(), tail_lines(layout.log_path(job.run_id), 1));
  records.store().set_run_status(job.run_id, event.status, event.error);
}

RunSummary run_local(const Plan& plan, SweepRecords& records, const RunLayout& layout,
                     const LocalRunOptions& options, RunObserver& observer) {
  return Runner(plan, records, layout, options, observer).run();
}

}  // namespace batchlab::sweeps
