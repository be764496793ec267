#include "sweeps/study/trial_source.h"

#include <fmt/format.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include "results/errors.h"
#include "results/query.h"
#include "sweeps/process.h"
#include "sweeps/sweep_records.h"

namespace batchlab::sweeps::study {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::optional<double> real(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  try {
    return std::stod(*text);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

std::optional<std::vector<results::EvalRow>> read_trial_evals(const std::string& records,
                                                              const std::string& run_id) {
  std::error_code ec;
  if (!fs::exists(records, ec)) return std::nullopt;
  try {
    const auto result = results::query_readonly(
        records, "SELECT step, val_acc, val_loss FROM evals WHERE run_id = ?1 ORDER BY step",
        {run_id});
    std::vector<results::EvalRow> rows;
    for (const auto& r : result.rows) {
      results::EvalRow row;
      row.run_id = run_id;
      row.step = r[0] ? std::stoll(*r[0]) : 0;
      row.val_acc = real(r[1]);
      row.val_loss = real(r[2]);
      rows.push_back(std::move(row));
    }
    return rows;
  } catch (const results::StoreError&) {
    return std::nullopt;  // no tables yet, or a moment's lock: the next read gets them
  }
}

TrialEnd trial_end_from(results::Store& store, const std::string& run_id) {
  TrialEnd end;
  end.run_id = run_id;
  if (auto run = store.get_run(run_id)) {
    end.status = run->status;
    end.error = run->error.value_or("");
    end.stop_reason = run->stop_reason;
    end.last_step = run->last_step;
  }
  end.evals = store.read_evals(run_id);
  return end;
}

struct ProcessTrialSource::Impl {
  struct Slot {
    Job job;
    int attempt = 1;
    ChildProcess process;
    FileLock lock;
    Clock::time_point started;
    Clock::time_point next_read;
  };
  struct Waiting {
    Job job;
    std::optional<StopRequest> stop;
  };

  SweepRecords& records;
  const RunLayout& layout;
  std::string sweep_name;
  ProcessSourceOptions options;
  RunObserver& observer;
  std::vector<std::optional<Slot>> slots;
  std::deque<Waiting> waiting;          // their job lock is still held by an older process
  std::vector<std::string> found_done;  // settled before they started: reported by poll()
  std::map<std::string, int64_t> attempts;
  std::map<std::string, int> crashes;
  int stop_level = 0;
  Clock::time_point next_progress = Clock::now();

  Impl(SweepRecords& r, const RunLayout& l, std::string name, ProcessSourceOptions o,
       RunObserver& obs)
      : records(r), layout(l), sweep_name(std::move(name)), options(std::move(o)), observer(obs) {
    slots.resize(std::max(1u, options.run.workers));
  }

  size_t occupied() const {
    size_t n = 0;
    for (const auto& s : slots) n += s ? 1 : 0;
    return n;
  }

  // With the trial's lock: starts it on a free worker, or finds it already ended.
  void launch(Job job, const std::optional<StopRequest>& stop, FileLock lock) {
    if (auto folded = fold_leftover(records, layout, job.run_id);
        folded && is_settled(folded->status) && !climbs_on(job.run_id, stop)) {
      found_done.push_back(job.run_id);
      return;
    }
    records.register_jobs({job});
    const std::string stop_path = layout.stop_path(job.run_id);
    std::error_code ec;
    fs::remove(stop_path, ec);
    if (stop) write_stop_request(stop_path, *stop);
    size_t worker = 0;
    while (slots[worker]) ++worker;  // the caller keeps a worker free for every trial it starts
    spawn(std::move(job), worker, std::move(lock));
  }

  // A run a fixed-budget search stopped at a rung (stop reason `rung`) goes on from its checkpoint
  // when it is started again with a later stop, or none: its point was promoted
  // (sweeps/study/budget_engine.h). Every other settled run is a result and is not run again.
  bool climbs_on(const std::string& run_id, const std::optional<StopRequest>& stop) {
    const auto run = records.store().get_run(run_id);
    if (!run || run->status != results::run_status::kStopped) return false;
    if (run->stop_reason != stop_reason::kRung) return false;
    return !stop || stop->step > run->last_step.value_or(0);
  }

  void spawn(Job job, size_t worker, FileLock lock) {
    // Attempts count on from what the database holds (a resumed study's earlier coordinators).
    auto [count, first] = attempts.emplace(job.run_id, 0);
    if (first) {
      const auto run = records.store().get_run(job.run_id);
      count->second = run ? run->attempts.value_or(0) : 0;
    }
    const int attempt = static_cast<int>(++count->second);
    AttemptSpec spec{&job, worker, attempt, {"--stop-file", layout.stop_path(job.run_id)}};
    ChildProcess process = spawn_attempt(records, layout, options.run, sweep_name, spec, lock);
    slots[worker] = Slot{std::move(job),  attempt,      process,
                         std::move(lock), Clock::now(), Clock::now() + options.curve_interval};
    JobEvent event;
    event.job = &slots[worker]->job;
    event.worker = worker;
    event.attempt = attempt;
    event.status = std::string(results::run_status::kRunning);
    observer.started(event);
  }

  void handle_stop_requests() {
    const auto* requests = options.run.stop_requests;
    const int level = requests != nullptr ? requests->load() : 0;
    if (level <= stop_level) return;
    stop_level = level;
    observer.stopping(level);
    for (auto& slot : slots) {
      if (slot) slot->process.send(level == 1 ? SIGTERM : SIGKILL);
    }
  }

  // A trial's process ended: a result, a retry (same worker, same lock), or an interruption.
  void finish(size_t worker, const ExitStatus& exit, SourceEvents& events) {
    Slot& slot = *slots[worker];
    const bool stopping = stop_level > 0;
    JobEvent event;
    event.job = &slot.job;
    event.worker = worker;
    event.attempt = slot.attempt;
    event.seconds = std::chrono::duration<double>(Clock::now() - slot.started).count();
    settle_attempt(records, layout, slot.job, exit, stopping, event);
    const bool bad_input = !exit.signaled && exit.code == 2;
    int& crashed = crashes[slot.job.run_id];
    if (is_rerunnable(event.status) && !stopping && !bad_input && crashed < options.run.retries) {
      ++crashed;
      event.retry = true;
      observer.finished(event);
      Slot old = std::move(*slots[worker]);
      slots[worker].reset();
      spawn(std::move(old.job), worker, std::move(old.lock));
      return;
    }
    observer.finished(event);
    events.ended.push_back(trial_end_from(records.store(), slot.job.run_id));
    slots[worker].reset();
  }

  void start_waiting() {
    for (auto it = waiting.begin(); it != waiting.end();) {
      if (stop_level > 0) {
        TrialEnd end;
        end.run_id = it->job.run_id;
        end.status = std::string(results::run_status::kPreempted);
        found_ended.push_back(std::move(end));
        it = waiting.erase(it);
        continue;
      }
      auto lock = FileLock::try_acquire(layout.lock_path(it->job.run_id));
      if (!lock) {
        ++it;
        continue;
      }
      Waiting w = std::move(*it);
      it = waiting.erase(it);
      launch(std::move(w.job), w.stop, std::move(*lock));
    }
  }

  void read_curves(SourceEvents& events) {
    const auto now = Clock::now();
    for (auto& slot : slots) {
      if (!slot || now < slot->next_read) continue;
      slot->next_read = now + options.curve_interval;
      auto evals = read_trial_evals(layout.records_path(slot->job.run_id), slot->job.run_id);
      if (evals) events.updates.push_back({slot->job.run_id, std::move(*evals)});
    }
  }

  // Running trials' status and step count go into the sweep database for `sweep status`.
  void fold_progress() {
    if (Clock::now() < next_progress) return;
    next_progress = Clock::now() + options.run.progress_interval;
    for (auto& slot : slots) {
      if (!slot) continue;
      try {
        records.ingest(slot->job.run_id, slot->attempt, /*series=*/false);
      } catch (const results::StoreError&) {
        // A records file the job is still creating; the next round or the final fold gets it.
      }
    }
  }

  std::vector<TrialEnd> found_ended;  // never started (the user stopped the study first)
};

ProcessTrialSource::ProcessTrialSource(SweepRecords& records, const RunLayout& layout,
                                       std::string sweep_name, ProcessSourceOptions options,
                                       RunObserver& observer)
    : impl_(std::make_unique<Impl>(records, layout, std::move(sweep_name), std::move(options),
                                   observer)) {}

ProcessTrialSource::~ProcessTrialSource() = default;

size_t ProcessTrialSource::slots() const { return impl_->slots.size(); }

size_t ProcessTrialSource::running() const {
  return impl_->occupied() + impl_->waiting.size() + impl_->found_done.size() +
         impl_->found_ended.size();
}

bool ProcessTrialSource::stopping() const { return impl_->stop_level > 0; }

void ProcessTrialSource::start(const Job& trial, const std::optional<StopRequest>& stop) {
  auto lock = FileLock::try_acquire(impl_->layout.lock_path(trial.run_id));
  if (!lock) {
    impl_->waiting.push_back({trial, stop});
    return;
  }
  impl_->launch(trial, stop, std::move(*lock));
}

void ProcessTrialSource::request_stop(const std::string& run_id, const StopRequest& stop) {
  write_stop_request(impl_->layout.stop_path(run_id), stop);
}

SourceEvents ProcessTrialSource::poll() {
  Impl& s = *impl_;
  SourceEvents events;
  s.handle_stop_requests();
  for (const auto& id : s.found_done) events.ended.push_back(trial_end_from(s.records.store(), id));
  s.found_done.clear();
  for (auto& end : s.found_ended) events.ended.push_back(std::move(end));
  s.found_ended.clear();
  s.start_waiting();
  for (size_t w = 0; w < s.slots.size(); ++w) {
    if (!s.slots[w]) continue;
    if (auto exit = s.slots[w]->process.poll()) s.finish(w, *exit, events);
  }
  s.read_curves(events);
  s.fold_progress();
  if (events.ended.empty() && events.updates.empty()) {
    std::this_thread::sleep_for(s.options.run.poll_interval);
  }
  return events;
}

}  // namespace batchlab::sweeps::study
