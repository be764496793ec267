#include "sweeps/study/slurm_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "core/atomic_file.h"
#include "results/errors.h"
#include "results/query.h"
#include "sweeps/process.h"
#include "sweeps/slurm.h"
#include "sweeps/slurm_commands.h"
#include "sweeps/slurm_job_files.h"
#include "sweeps/study/slurm_trial.h"
#include "sweeps/study/trial_source.h"
#include "sweeps/sweep_records.h"

namespace batchlab::sweeps::study {

namespace {

namespace fs = std::filesystem;
using Clock = SlurmClock;

// Folding a trial's snapshot can fail for a moment on a shared filesystem (ESTALE while the trial
// renames a new snapshot into place, a half-visible file): it is tried again at the next look,
// and only this many failures in a row end the coordinator.
constexpr int kFoldErrorsTolerated = 10;

}  // namespace

std::string trial_slurm_job(const RunLayout& layout, const std::string& run_id) {
  return read_slurm_job_file(layout.slurm_job_path(run_id));
}

struct SlurmTrialSource::Impl {
  SweepRecords& records;
  const RunLayout& layout;
  std::string sweep_name;
  SlurmSourceOptions options;
  RunObserver& observer;
  std::map<std::string, Tracked> tracked;  // by run id
  std::vector<TrialEnd> found;             // ended before they started (a resumed study)
  bool stop = false;
  std::optional<std::string> fatal;
  int vanished_in_a_row = 0;
  Clock::time_point next_queue = Clock::now();
  Clock::time_point next_publish = Clock::now();
  SlurmQueueView queue;

  Impl(SweepRecords& r, const RunLayout& l, std::string name, SlurmSourceOptions o,
       RunObserver& obs)
      : records(r),
        layout(l),
        sweep_name(std::move(name)),
        options(with_job_name(std::move(o), sweep_name)),
        observer(obs),
        queue(options.slurm.job_name, options.poll_interval) {}

  static SlurmSourceOptions with_job_name(SlurmSourceOptions o, const std::string& sweep) {
    if (o.slurm.job_name.empty()) o.slurm.job_name = slurm_job_name(sweep);
    return o;
  }

  int64_t recorded_attempts(const std::string& run_id) {
    const auto run = records.store().get_run(run_id);
    return run ? run->attempts.value_or(0) : 0;
  }

  void stop_for(std::string why) {
    if (!fatal) fatal = std::move(why);
    stop = true;
  }

  // ---- Starting to track a trial

  void start(const Job& trial, const std::optional<StopRequest>& stop_request) {
    records.register_jobs({trial});
    layout.write_config(trial.run_id, trial.config_toml);
    Tracked t;
    t.job = trial;
    t.slurm.id = trial_slurm_job(layout, trial.run_id);
    t.curve.next_read = Clock::now();
    const auto folded = fold_at_start(trial.run_id);
    if (folded && *folded) return;  // ended meanwhile: reported from `found`
    t.slurm.attempt = recorded_attempts(trial.run_id);
    // A job recorded by an earlier coordinator is adopted while it is in the queue. When squeue
    // does not answer it counts as alive: submitting it again could run the trial twice, and the
    // next look at the queue settles it either way. An unreadable snapshot is not resubmitted
    // either: check_queue folds it first.
    bool adopt = false;
    if (!t.slurm.id.empty()) {
      const auto& queued = queue.jobs(/*fresh=*/false);
      adopt = !queued || queued->count(t.slurm.id) > 0;
    }
    if (!folded && !adopt) {
      t.state = TrialState::unfolded;  // tracked without a submission until its snapshot is read
      adopt = true;
    }
    if (!adopt) {
      std::error_code ec;
      fs::remove(layout.stop_path(trial.run_id), ec);
    }
    // The evaluations published so far predate this request (an adopted trial may be far past its
    // step): the grace starts at the first one after them, as for a request to a tracked trial.
    if (stop_request) {
      write_stop_request(layout.stop_path(trial.run_id), *stop_request);
      note_stop_request(t, *stop_request, layout.records_path(trial.run_id));
    }
    if (adopt || submit_at_start(t)) tracked.emplace(trial.run_id, std::move(t));
  }

  // Folds what the trial published before this coordinator: true when it ended with a result
  // (reported from `found`), false when it goes on, nullopt when its snapshot cannot be read yet.
  std::optional<bool> fold_at_start(const std::string& run_id) {
    try {
      const auto folded = records.ingest(run_id, std::nullopt);
      if (folded && is_settled(folded->status)) {
        found.push_back(trial_end_from(records.store(), run_id));
        return true;
      }
      return false;
    } catch (const std::exception&) {
      return std::nullopt;  // check_queue folds it again before deciding anything
    }
  }

  // A trial neither ended nor queued: submitted, unless its attempts are spent or sbatch will not.
  bool submit_at_start(Tracked& t) {
    if (t.slurm.attempt >= options.max_attempts) {
      found.push_back(
          give_up(t, exhausted(t, options.max_attempts, "earlier coordinators submitted it")));
      return false;
    }
    if (!submit(t)) {
      found.push_back(interrupted(t.job.run_id, "not submitted: the coordinator stopped"));
      return false;
    }
    return true;
  }

  // ---- Transitions while tracked

  // -> submitted: the trial's next job; false when sbatch would not (the coordinator then stops).
  bool submit(Tracked& t) {
    SlurmSubmission submission;
    try {
      submission = submit_array(sweep_name, {&t.job}, layout, options.slurm);
    } catch (const SbatchError& e) {
      stop_for(sbatch_stop_message(e));
      return false;
    }
    t.slurm.submitted(submission.job_id, submission.output(0),
                      file_modified(layout.records_path(t.job.run_id)));
    t.state = TrialState::submitted;
    write_file_atomically(layout.slurm_job_path(t.job.run_id), t.slurm.id + "\n");
    // Its array's one task; the attempt is recorded now, so that the bound survives us.
    records.store().set_scheduler_job(t.job.run_id, t.slurm.id + "_0", t.slurm.attempt);
    observer.started(job_event(t, results::run_status::kRunning));
    return true;
  }

  // -> stop_forced: a trial that left its stop request unanswered past the grace is cancelled.
  void cancel_for_stop(Tracked& t) {
    run_slurm_command({"scancel", t.slurm.id});
    t.state = TrialState::stop_forced;
  }

  // ---- Ends: the trial's job left the queue

  // Its result, or a new submission. True while it is tracked (submitted again, or its snapshot
  // not readable yet).
  bool ended(Tracked& t, SourceEvents& events) {
    std::optional<results::IngestedRun> folded;
    try {
      folded = records.ingest(t.job.run_id, t.slurm.attempt);
      t.fold_errors = 0;
    } catch (const std::exception&) {
      if (++t.fold_errors < kFoldErrorsTolerated) return true;
      throw;
    }
    const std::string status = folded ? folded->status : "";
    if (is_settled(status)) return settle(t, events);
    if (t.state == TrialState::stop_forced) return force_stop(t, events);
    if (t.state == TrialState::unfolded) return resubmit_unfolded(t, events);
    return no_result(t, folded, events);
  }

  // A result (done, diverged, stopped) goes to the engine.
  bool settle(Tracked& t, SourceEvents& events) {
    vanished_in_a_row = 0;
    events.ended.push_back(trial_end_from(records.store(), t.job.run_id));
    return false;
  }

  // Cancelled for its stop: `stopped` for that request, with the evaluations it published (its
  // last records may lie beyond the requested step).
  bool force_stop(Tracked& t, SourceEvents& events) {
    records.store().set_run_status(t.job.run_id, results::run_status::kStopped,
                                   forced_stop_error(t, options.stop_grace), std::nullopt,
                                   t.stop.request->reason);
    events.ended.push_back(trial_end_from(records.store(), t.job.run_id));
    return false;
  }

  // Adopted with an unreadable snapshot, now readable and without a result: submitted again.
  bool resubmit_unfolded(Tracked& t, SourceEvents& events) {
    if (t.slurm.attempt >= options.max_attempts) {
      events.ended.push_back(
          give_up(t, exhausted(t, options.max_attempts, "earlier coordinators submitted it")));
      return false;
    }
    return submit(t) || leave(t, events, "not submitted: the coordinator stopped");
  }

  bool no_result(Tracked& t, const std::optional<results::IngestedRun>& folded,
                 SourceEvents& events) {
    // No result: preempted, cancelled (both record `preempted`), killed before its last snapshot
    // (still `running`), crashed (`failed`), or never ran (vanished).
    const NoResult kind = no_result_kind(t, folded ? folded->status : "",
                                         file_modified(layout.records_path(t.job.run_id)));
    vanished_in_a_row = kind == NoResult::vanished ? vanished_in_a_row + 1 : 0;
    const std::string why =
        why_no_result(t, folded ? folded->error : std::nullopt, kind == NoResult::vanished);
    JobEvent event = job_event(t, kind == NoResult::preempted ? results::run_status::kPreempted
                                                              : results::run_status::kFailed);
    event.error = why;
    event.exit = fmt::format("Slurm job {}", t.slurm.id);
    if (kind == NoResult::vanished && vanished_in_a_row >= options.max_vanished_in_a_row) {
      return give_up_vanishing(t, event, why, events);
    }
    if (stop) {
      observer.finished(event);
      return leave(t, events, "not submitted again: the coordinator stops (" + why + ")");
    }
    const bool crashed = kind == NoResult::crashed;
    if ((!crashed || t.crashes < options.retries) && t.slurm.attempt < options.max_attempts) {
      return retry(t, event, crashed, events);
    }
    observer.finished(event);
    events.ended.push_back(
        give_up(t, give_up_reason(t, kind, options.retries, options.max_attempts, why)));
    return false;
  }

  // Jobs in a row that never ran: the same mistake would sink every trial, so the coordinator
  // stops instead of submitting more.
  bool give_up_vanishing(Tracked& t, const JobEvent& event, const std::string& why,
                         SourceEvents& events) {
    stop_for(vanishing_stop_message(vanished_in_a_row, why));
    observer.finished(event);
    events.ended.push_back(give_up(t, why));
    return false;
  }

  bool retry(Tracked& t, JobEvent& event, bool crashed, SourceEvents& events) {
    t.crashes += crashed ? 1 : 0;
    event.retry = true;
    observer.finished(event);
    return submit(t) || leave(t, events, "not submitted again: the coordinator stopped");
  }

  // A trial that will not be submitted again: `failed` with `why`, to the engine.
  TrialEnd give_up(Tracked& t, const std::string& why) {
    records.store().set_run_status(t.job.run_id, results::run_status::kFailed, why);
    return trial_end_from(records.store(), t.job.run_id);
  }

  bool leave(Tracked& t, SourceEvents& events, std::string why) {
    events.ended.push_back(interrupted(t.job.run_id, std::move(why)));
    return false;
  }

  // The coordinator stops: every trial goes on in Slurm, reported to the engine as interrupted.
  void leave_running(SourceEvents& events) {
    for (auto& [run_id, t] : tracked) {
      events.ended.push_back(interrupted(
          run_id,
          fmt::format("left running as Slurm job {}: the next coordinator adopts it", t.slurm.id)));
    }
    tracked.clear();
  }

  // ---- Watching the queue and the curves

  void check_queue(SourceEvents& events) {
    if (Clock::now() < next_queue) return;
    next_queue = Clock::now() + options.poll_interval;
    const auto queued = queue.jobs(/*fresh=*/true);
    if (!queued) return;  // squeue did not answer: decide nothing now
    for (auto& [run_id, t] : tracked) {
      t.slurm.saw_queue(!t.slurm.id.empty() && queued->count(t.slurm.id), Clock::now());
    }
    ask_for_missed_jobs();
    for (auto it = tracked.begin(); it != tracked.end();) {
      Tracked& t = it->second;
      const bool in_queue = !t.slurm.id.empty() && t.slurm.missing == 0;
      const bool gone = t.slurm.gone(Clock::now(), options.poll_interval);
      const bool keep = in_queue || (!gone && !t.slurm.id.empty()) || ended(t, events);
      it = keep ? std::next(it) : tracked.erase(it);
    }
  }

  // The jobs the listing has missed long enough to count as ended, asked for by their ids (one
  // squeue for all): one in a state it may still run in is still there, and not submitted again
  // beside itself; when squeue does not answer, nothing is decided now. For sweeps_slurm_study's
  // requeued trial run twice (docs/hostile-input.md). What squeue said goes into the message of
  // a job taken for ended.
  void ask_for_missed_jobs() {
    const auto now = Clock::now();
    std::vector<std::string> missed;
    for (const auto& [run_id, t] : tracked) {
      if (!t.slurm.id.empty() && t.slurm.gone(now, options.poll_interval)) {
        missed.push_back(t.slurm.id);
      }
    }
    if (missed.empty()) return;
    const auto states = slurm_job_states(missed);
    for (auto& [run_id, t] : tracked) {
      SlurmJob& job = t.slurm;
      if (std::find(missed.begin(), missed.end(), job.id) == missed.end()) continue;
      const auto state =
          states ? states->find(job.id) : std::map<std::string, std::string>::const_iterator{};
      const bool known = states && state != states->end();
      if (!states || (known && slurm_state_may_run(state->second))) {
        job.saw_queue(true, now);
        continue;
      }
      job.asked = fmt::format(
          "the listing by name missed it {} times over {} s, and `squeue -t all -j {}` {}",
          job.missing,
          std::chrono::duration_cast<std::chrono::seconds>(now - *job.missing_since).count(),
          job.id, known ? "says " + state->second : "does not name it");
    }
  }

  void read_curves(SourceEvents& events) {
    const auto now = Clock::now();
    for (auto& [run_id, t] : tracked) {
      if (now >= t.curve.next_read) {
        t.curve.next_read = now + options.curve_interval;
        read_published(run_id, t, events, now);
      }
      check_stop_answered(t, now);
    }
  }

  // The trial's published records, once per snapshot (it publishes every --snapshot-every s).
  void read_published(const std::string& run_id, Tracked& t, SourceEvents& events,
                      Clock::time_point now) {
    auto evals = read_new_snapshot(t, layout.records_path(run_id), now);
    if (!evals) return;
    events.updates.push_back({run_id, std::move(*evals)});
    try {
      records.ingest(run_id, t.slurm.attempt, /*series=*/false);  // progress for `sweep status`
    } catch (const std::exception&) {
    }
  }

  // ---- Stop requests

  // A trial past its stop's grace (PendingStop::overdue) is cancelled.
  void check_stop_answered(Tracked& t, Clock::time_point now) {
    if (t.state == TrialState::stop_forced) return;
    if (t.stop.overdue(t.curve, options.stop_grace, now)) cancel_for_stop(t);
  }

  void request_stop(const std::string& run_id, const StopRequest& request) {
    write_stop_request(layout.stop_path(run_id), request);
    auto it = tracked.find(run_id);
    if (it != tracked.end()) note_stop_request(it->second, request, layout.records_path(run_id));
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

const std::optional<std::string>& SlurmTrialSource::fatal() const { return impl_->fatal; }

void SlurmTrialSource::start(const Job& trial, const std::optional<StopRequest>& stop) {
  impl_->start(trial, stop);
}

void SlurmTrialSource::request_stop(const std::string& run_id, const StopRequest& stop) {
  impl_->request_stop(run_id, stop);
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
  if (!s.stop) {
    s.check_queue(events);
    s.read_curves(events);
  }
  if (s.stop) s.leave_running(events);
  s.maybe_publish();
  if (events.ended.empty() && events.updates.empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return events;
}

}  // namespace batchlab::sweeps::study
