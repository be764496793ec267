#include "sweeps/study_slurm_source.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "results/errors.h"
#include "results/query.h"
#include "sweeps/process.h"
#include "sweeps/study_trial_source.h"
#include "sweeps/sweep_records.h"

namespace batchlab::sweeps::study {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

void write_text(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << text << "\n";
    if (!out) throw Error(fmt::format("cannot write {}", tmp));
  }
  fs::rename(tmp, path);
}

}  // namespace

std::string trial_slurm_job(const RunLayout& layout, const std::string& run_id) {
  std::ifstream in(layout.slurm_job_path(run_id));
  std::string id;
  in >> id;
  return id;
}

struct SlurmTrialSource::Impl {
  struct Tracked {
    Job job;
    std::string slurm_job;
    int64_t attempt = 0;
    int requeues = 0;
    int crashes = 0;
    Clock::time_point next_read;
    std::optional<fs::file_time_type> read_version;   // the published records last read
    std::optional<int64_t> published_step;            // their last evaluation's step
    std::optional<StopRequest> stop;                  // the latest request written for it
    std::optional<Clock::time_point> stop_due_since;  // first seen past the requested step
    bool cancelled_for_stop = false;
  };

  SweepRecords& records;
  const RunLayout& layout;
  std::string sweep_name;
  SlurmSourceOptions options;
  RunObserver& observer;
  std::map<std::string, Tracked> tracked;  // by run id
  std::vector<TrialEnd> found;             // ended before they started (a resumed study)
  bool stop = false;
  Clock::time_point next_queue = Clock::now();
  Clock::time_point next_publish = Clock::now();

  Impl(SweepRecords& r, const RunLayout& l, std::string name, SlurmSourceOptions o,
       RunObserver& obs)
      : records(r), layout(l), sweep_name(std::move(name)), options(std::move(o)), observer(obs) {
    if (options.slurm.job_name.empty()) options.slurm.job_name = "batchlab-" + sweep_name;
  }

  // The job ids of this study's queue; nullopt when squeue cannot be asked now.
  std::optional<std::set<std::string>> queued_jobs() {
    const auto queue = slurm_queue({options.slurm.job_name});
    if (!queue) return std::nullopt;
    std::set<std::string> ids;
    for (const auto& entry : *queue) ids.insert(entry.job_id);
    return ids;
  }

  int64_t recorded_attempts(const std::string& run_id) {
    const auto run = records.store().get_run(run_id);
    return run ? run->attempts.value_or(0) : 0;
  }

  void submit(Tracked& t) {
    ++t.attempt;
    const auto submission = submit_array(sweep_name, {&t.job}, layout, options.slurm);
    t.slurm_job = submission.job_id;
    write_text(layout.slurm_job_path(t.job.run_id), t.slurm_job);
    records.store().set_scheduler_job(t.job.run_id, t.slurm_job + "_0");  // its array's one task
    JobEvent event;
    event.job = &t.job;
    event.attempt = static_cast<int>(t.attempt);
    event.status = std::string(results::run_status::kRunning);
    observer.started(event);
  }

  void start(const Job& trial, const std::optional<StopRequest>& stop_request) {
    records.register_jobs({trial});
    layout.write_config(trial.run_id, trial.config_toml);
    if (auto folded = records.ingest(trial.run_id, std::nullopt);
        folded && is_settled(folded->status)) {
      found.push_back(trial_end_from(records.store(), trial.run_id));
      return;
    }
    Tracked t;
    t.job = trial;
    t.slurm_job = trial_slurm_job(layout, trial.run_id);
    t.attempt = recorded_attempts(trial.run_id);
    t.next_read = Clock::now();
    // A job recorded by an earlier coordinator is adopted while it is in the queue. When squeue
    // does not answer it counts as alive: submitting it again could run the trial twice, and the
    // next look at the queue settles it either way.
    bool adopt = false;
    if (!t.slurm_job.empty()) {
      const auto queued = queued_jobs();
      adopt = !queued || queued->count(t.slurm_job) > 0;
    }
    if (!adopt) {
      std::error_code ec;
      fs::remove(layout.stop_path(trial.run_id), ec);
    }
    if (stop_request) write_stop_request(layout.stop_path(trial.run_id), *stop_request);
    t.stop = stop_request;
    if (!adopt) submit(t);
    tracked.emplace(trial.run_id, std::move(t));
  }

  // A trial cancelled because it left its stop request unanswered: `stopped` for that request, with
  // the evaluations it published (its last records may lie beyond the requested step).
  void record_forced_stop(Tracked& t, SourceEvents& events) {
    const std::string error = fmt::format(
        "{}; it had not answered its stop file {} s after publishing that step, and its Slurm job "
        "{} was cancelled",
        t.stop->at_step(t.stop->step),
        std::chrono::duration_cast<std::chrono::seconds>(options.stop_grace).count(), t.slurm_job);
    records.store().set_run_status(t.job.run_id, results::run_status::kStopped, error, std::nullopt,
                                   t.stop->reason);
    events.ended.push_back(trial_end_from(records.store(), t.job.run_id));
  }

  // A trial whose job left the queue: its result, or a new submission. True while it is tracked
  // (submitted again).
  bool ended(Tracked& t, SourceEvents& events) {
    const auto folded = records.ingest(t.job.run_id, t.attempt);
    const std::string status = folded ? folded->status : "";
    if (t.cancelled_for_stop && !is_settled(status)) {
      record_forced_stop(t, events);
      return false;
    }
    if (is_settled(status)) {
      events.ended.push_back(trial_end_from(records.store(), t.job.run_id));
      return false;
    }
    // No result: preempted, cancelled (both record `preempted`), killed before its last snapshot
    // (still `running`, or no records at all), or crashed (`failed`).
    const bool crashed = status != results::run_status::kPreempted &&
                         status != results::run_status::kRunning && !status.empty();
    int& count = crashed ? t.crashes : t.requeues;
    const int limit = crashed ? options.retries : options.max_requeues;
    JobEvent event;
    event.job = &t.job;
    event.attempt = static_cast<int>(t.attempt);
    event.status = status.empty() ? std::string(results::run_status::kPreempted) : status;
    event.error = folded && folded->error ? *folded->error : "its Slurm job ended without records";
    event.exit = fmt::format("Slurm job {}", t.slurm_job);
    if (count < limit && !stop) {
      ++count;
      event.retry = true;
      observer.finished(event);
      submit(t);
      return true;
    }
    observer.finished(event);
    TrialEnd end = trial_end_from(records.store(), t.job.run_id);
    // No result and no crash (planned, running, preempted): the engine runs it again later.
    if (!is_settled(end.status) && end.status != results::run_status::kFailed) {
      end.status = std::string(results::run_status::kPreempted);
    }
    events.ended.push_back(std::move(end));
    return false;
  }

  // The coordinator stops: every trial goes on in Slurm, reported to the engine as interrupted.
  void leave_running(SourceEvents& events) {
    for (auto& [run_id, t] : tracked) {
      TrialEnd end;
      end.run_id = run_id;
      end.status = std::string(results::run_status::kPreempted);
      end.error =
          fmt::format("left running as Slurm job {}: the next coordinator adopts it", t.slurm_job);
      events.ended.push_back(std::move(end));
    }
    tracked.clear();
  }

  void check_queue(SourceEvents& events) {
    if (Clock::now() < next_queue) return;
    next_queue = Clock::now() + options.poll_interval;
    const auto queued = queued_jobs();
    if (!queued) return;  // squeue did not answer: decide nothing now
    for (auto it = tracked.begin(); it != tracked.end();) {
      const bool keep = queued->count(it->second.slurm_job) > 0 || ended(it->second, events);
      it = keep ? std::next(it) : tracked.erase(it);
    }
  }

  void read_curves(SourceEvents& events) {
    const auto now = Clock::now();
    for (auto& [run_id, t] : tracked) {
      if (now >= t.next_read) {
        t.next_read = now + options.curve_interval;
        read_published(run_id, t, events);
      }
      check_stop_answered(t, now);
    }
  }

  // The trial's published records, once per snapshot (it publishes every --snapshot-every s).
  void read_published(const std::string& run_id, Tracked& t, SourceEvents& events) {
    std::error_code ec;
    const auto version = fs::last_write_time(layout.records_path(run_id), ec);
    if (ec || (t.read_version && *t.read_version == version)) return;
    auto evals = read_trial_evals(layout.records_path(run_id), run_id);
    if (!evals) return;
    t.read_version = version;
    if (!evals->empty()) t.published_step = evals->back().step;
    events.updates.push_back({run_id, std::move(*evals)});
    try {
      records.ingest(run_id, t.attempt, /*series=*/false);  // progress for `sweep status`
    } catch (const results::StoreError&) {
    }
  }

  // A trial whose published evaluations reached its requested step must end soon after (it reads
  // the stop file after every evaluation); past the grace, it is cancelled. Checked on every pass:
  // a hung trial publishes nothing more.
  void check_stop_answered(Tracked& t, Clock::time_point now) {
    if (!t.stop || t.cancelled_for_stop || !t.published_step || *t.published_step < t.stop->step) {
      return;
    }
    if (!t.stop_due_since) t.stop_due_since = now;
    if (now - *t.stop_due_since < options.stop_grace) return;
    capture_command("scancel " + shell_quote(t.slurm_job));
    t.cancelled_for_stop = true;
  }

  void maybe_publish() {
    if (!options.publish || Clock::now() < next_publish) return;
    next_publish = Clock::now() + options.publish_interval;
    options.publish();
  }
};

SlurmTrialSource::SlurmTrialSource(SweepRecords& records, const RunLayout& layout,
                                   std::string sweep_name, SlurmSourceOptions options,
                                   RunObserver& observer)
    : impl_(std::make_unique<Impl>(records, layout, std::move(sweep_name), std::move(options),
                                   observer)) {}

SlurmTrialSource::~SlurmTrialSource() = default;

size_t SlurmTrialSource::slots() const { return std::max<size_t>(1, impl_->options.max_jobs); }

size_t SlurmTrialSource::running() const { return impl_->tracked.size() + impl_->found.size(); }

bool SlurmTrialSource::stopping() const { return impl_->stop; }

void SlurmTrialSource::start(const Job& trial, const std::optional<StopRequest>& stop) {
  impl_->start(trial, stop);
}

void SlurmTrialSource::request_stop(const std::string& run_id, const StopRequest& stop) {
  write_stop_request(impl_->layout.stop_path(run_id), stop);
  auto it = impl_->tracked.find(run_id);
  if (it != impl_->tracked.end()) {
    it->second.stop = stop;
    it->second.stop_due_since.reset();  // an earlier step: its grace starts when it is reached
  }
}

SourceEvents SlurmTrialSource::poll() {
  Impl& s = *impl_;
  SourceEvents events;
  for (auto& end : s.found) events.ended.push_back(std::move(end));
  s.found.clear();
  const auto* requests = s.options.stop_requests;
  if (!s.stop && requests != nullptr && requests->load() > 0) {
    s.stop = true;
    s.observer.stopping(1);
  }
  if (s.stop) {
    s.leave_running(events);
  } else {
    s.check_queue(events);
    s.read_curves(events);
  }
  s.maybe_publish();
  if (events.ended.empty() && events.updates.empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return events;
}

}  // namespace batchlab::sweeps::study
