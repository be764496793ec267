#include "sweeps/study/slurm_source.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "core/atomic_file.h"
#include "results/errors.h"
#include "results/query.h"
#include "sweeps/process.h"
#include "sweeps/slurm_commands.h"
#include "sweeps/study/trial_source.h"
#include "sweeps/sweep_records.h"

namespace batchlab::sweeps::study {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Folding a trial's snapshot can fail for a moment on a shared filesystem (ESTALE while the trial
// renames a new snapshot into place, a half-visible file): it is tried again at the next look,
// and only this many failures in a row end the coordinator.
constexpr int kFoldErrorsTolerated = 10;
// A job missing from squeue counts as ended after this many poll intervals (and two answers).
constexpr int kGonePolls = 5;

std::optional<fs::file_time_type> modified(const std::string& path) {
  std::error_code ec;
  const auto t = fs::last_write_time(path, ec);
  if (ec) return std::nullopt;
  return t;
}

// What Slurm's output file of a job says, for a diagnosis.
std::string output_says(const std::string& path) {
  std::error_code ec;
  if (path.empty()) return "";
  if (!fs::exists(path, ec)) {
    return fmt::format(
        "its Slurm output file {} does not exist (is its folder writable from the compute "
        "nodes?)",
        path);
  }
  const std::string tail = tail_lines(path, 3);
  return tail.empty() ? fmt::format("its Slurm output file {} is empty", path)
                      : fmt::format("its Slurm output file {} ends: {}", path, tail);
}

}  // namespace

std::string trial_slurm_job(const RunLayout& layout, const std::string& run_id) {
  std::ifstream in(layout.slurm_job_path(run_id));
  std::string id;
  in >> id;
  return id;
}

struct SlurmTrialSource::Impl {
  // A trial's life on Slurm as this coordinator tracks it. The transitions, one function each:
  //   submit()               -> submitted    (from any state but stop_forced)
  //   start(), job queued    -> adopted      (an earlier coordinator's job)
  //   start(), unreadable    -> unfolded     (folded before anything is decided)
  //   cancel_for_stop()      -> stop_forced  (its stop left unanswered past the grace)
  // and once its job has left the queue (ended()): settle() (a result), force_stop() (stopped
  // for its request), resubmit_unfolded(), or for a job without a result (NoResult: vanished,
  // crashed, preempted) give_up_vanishing() (the coordinator stops), leave() (the coordinator is
  // stopping), retry() or give_up().
  enum class TrialState {
    submitted,    // this coordinator submitted its job: it knows the snapshot from before, so it
                  // can tell a job that published nothing
    adopted,      // an earlier coordinator's job, still queued when this one started
    unfolded,     // its snapshot was unreadable at the start
    stop_forced,  // cancelled with scancel for leaving its stop request unanswered
  };
  // Why a job that left the queue has no result.
  enum class NoResult {
    vanished,   // it published nothing: batchlab never ran on the node
    crashed,    // its records say failed
    preempted,  // preempted, cancelled, or killed before its last snapshot
  };

  struct SlurmJob {
    std::string id;
    std::string output;   // Slurm's output file
    int64_t attempt = 0;  // Slurm jobs submitted for the trial in all (runs.attempts)
    std::optional<fs::file_time_type> records_at_submit;  // its snapshot when last submitted
    int missing = 0;                                      // squeue answers in a row without the job
    std::optional<Clock::time_point> missing_since;       // the first of those answers
  };
  // What the trial has published, read every curve interval.
  struct Curve {
    Clock::time_point next_read;
    std::optional<fs::file_time_type> read_version;  // the published records last read
    std::optional<int64_t> published_step;           // their last evaluation's step
    std::optional<Clock::time_point> new_eval_seen;  // when the last new evaluation was read
    std::optional<Clock::duration> eval_gap;         // between the last two new evaluations
  };
  // The latest stop request written for the trial, and whether it has had its chance to answer.
  struct PendingStop {
    std::optional<StopRequest> request;
    std::optional<int64_t> step_at_request;      // published when it was written
    bool step_at_request_unread = false;         // ... not readable then: the first read says
    std::optional<Clock::time_point> due_since;  // first evaluation published after it
  };
  struct Tracked {
    Job job;
    TrialState state = TrialState::adopted;
    SlurmJob slurm;
    Curve curve;
    PendingStop stop;
    int crashes = 0;
    int fold_errors = 0;
  };

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
  std::optional<std::set<std::string>> queue;  // the last answer of squeue
  std::optional<Clock::time_point> queue_read;

  Impl(SweepRecords& r, const RunLayout& l, std::string name, SlurmSourceOptions o,
       RunObserver& obs)
      : records(r), layout(l), sweep_name(std::move(name)), options(std::move(o)), observer(obs) {
    if (options.slurm.job_name.empty()) options.slurm.job_name = slurm_job_name(sweep_name);
  }

  // The job ids of this study's queue, asked at most once per poll interval for all trials;
  // nullopt when squeue does not answer.
  const std::optional<std::set<std::string>>& queued_jobs(bool fresh) {
    const auto now = Clock::now();
    if (!fresh && queue_read && now - *queue_read < options.poll_interval) return queue;
    queue_read = now;
    queue.reset();
    if (const auto entries = slurm_queue({options.slurm.job_name})) {
      queue.emplace();
      for (const auto& entry : *entries) queue->insert(entry.job_id);
    }
    return queue;
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
      const auto& queued = queued_jobs(/*fresh=*/false);
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
    if (stop_request) write_stop_request(layout.stop_path(trial.run_id), *stop_request);
    t.stop.request = stop_request;
    // The evaluations published so far predate this request (an adopted trial may be far past its
    // step): the grace starts at the first one after them, as for a request to a tracked trial.
    if (stop_request) note_step_at_request(t);
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
      found.push_back(give_up(t, exhausted(t, "earlier coordinators submitted it")));
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
      stop_for(fmt::format(
          "{}\nThe study stopped with nothing lost; `batchlab sweep submit` again resumes it{}.",
          e.what(),
          e.failure() == SbatchFailure::limit ? " once the queue has room (or with a smaller "
                                                "--max-parallel)"
                                              : ""));
      return false;
    }
    ++t.slurm.attempt;
    t.slurm.missing = 0;
    t.slurm.missing_since.reset();
    t.state = TrialState::submitted;
    t.slurm.id = submission.job_id;
    t.slurm.output = submission.output(0);
    t.slurm.records_at_submit = modified(layout.records_path(t.job.run_id));
    write_file_atomically(layout.slurm_job_path(t.job.run_id), t.slurm.id + "\n");
    // Its array's one task; the attempt is recorded now, so that the bound survives us.
    records.store().set_scheduler_job(t.job.run_id, t.slurm.id + "_0", t.slurm.attempt);
    JobEvent event;
    event.job = &t.job;
    event.attempt = static_cast<int>(t.slurm.attempt);
    event.status = std::string(results::run_status::kRunning);
    observer.started(event);
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
    const std::string error = fmt::format(
        "{}; it had not answered its stop file {} s after publishing an evaluation past the "
        "request (and one interval between its evaluations), and its Slurm job {} was cancelled",
        t.stop.request->at_step(t.stop.request->step),
        std::chrono::duration_cast<std::chrono::seconds>(options.stop_grace).count(), t.slurm.id);
    records.store().set_run_status(t.job.run_id, results::run_status::kStopped, error, std::nullopt,
                                   t.stop.request->reason);
    events.ended.push_back(trial_end_from(records.store(), t.job.run_id));
    return false;
  }

  // Adopted with an unreadable snapshot, now readable and without a result: submitted again.
  bool resubmit_unfolded(Tracked& t, SourceEvents& events) {
    if (t.slurm.attempt >= options.max_attempts) {
      events.ended.push_back(give_up(t, exhausted(t, "earlier coordinators submitted it")));
      return false;
    }
    return submit(t) || leave(t, events, "not submitted: the coordinator stopped");
  }

  // No result: preempted, cancelled (both record `preempted`), killed before its last snapshot
  // (still `running`), crashed (`failed`), or never ran (vanished).
  NoResult no_result_kind(const Tracked& t, const std::string& status) const {
    if (t.state == TrialState::submitted &&
        modified(layout.records_path(t.job.run_id)) == t.slurm.records_at_submit) {
      return NoResult::vanished;
    }
    const bool crashed = status != results::run_status::kPreempted &&
                         status != results::run_status::kRunning && !status.empty();
    return crashed ? NoResult::crashed : NoResult::preempted;
  }

  bool no_result(Tracked& t, const std::optional<results::IngestedRun>& folded,
                 SourceEvents& events) {
    const NoResult kind = no_result_kind(t, folded ? folded->status : "");
    vanished_in_a_row = kind == NoResult::vanished ? vanished_in_a_row + 1 : 0;
    const std::string why = why_no_result(t, folded, kind == NoResult::vanished);
    JobEvent event;
    event.job = &t.job;
    event.attempt = static_cast<int>(t.slurm.attempt);
    event.status = kind == NoResult::preempted ? std::string(results::run_status::kPreempted)
                                               : std::string(results::run_status::kFailed);
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
        give_up(t, crashed && t.slurm.attempt < options.max_attempts
                       ? fmt::format("crashed, after {} retries: {}", options.retries, why)
                       : exhausted(t, why)));
    return false;
  }

  // Jobs in a row that never ran: the same mistake would sink every trial, so the coordinator
  // stops instead of submitting more.
  bool give_up_vanishing(Tracked& t, const JobEvent& event, const std::string& why,
                         SourceEvents& events) {
    stop_for(fmt::format(
        "{} trial jobs in a row ended without publishing any records; the last, {}. The "
        "coordinator stops instead of submitting more (docs/sweeps.md, \"What a site needs\"): "
        "make batchlab and LibTorch visible on the compute nodes and the run folder writable, "
        "then `batchlab sweep submit` again",
        vanished_in_a_row, why));
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

  static TrialEnd interrupted(const std::string& run_id, std::string why) {
    TrialEnd end;
    end.run_id = run_id;
    end.status = std::string(results::run_status::kPreempted);
    end.error = std::move(why);
    return end;
  }

  std::string exhausted(const Tracked& t, const std::string& last) const {
    return fmt::format(
        "its Slurm jobs ended without a result {} times, the bound (--max-attempts {}); the last: "
        "{}. Fix the cause, then `batchlab sweep submit` with a larger --max-attempts runs it "
        "again",
        t.slurm.attempt, options.max_attempts, last);
  }

  // Why a job that left the queue has no result, for the log and the diagnosis.
  std::string why_no_result(const Tracked& t, const std::optional<results::IngestedRun>& folded,
                            bool vanished) const {
    if (vanished) {
      return fmt::format(
          "Slurm job {} ended without publishing any records (batchlab did not run on the node, "
          "or could not write its run folder); {}",
          t.slurm.id, output_says(t.slurm.output));
    }
    return fmt::format("Slurm job {}: {}; {}", t.slurm.id,
                       folded && folded->error ? *folded->error : "ended without a result",
                       output_says(t.slurm.output));
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
    const auto queued = queued_jobs(/*fresh=*/true);
    if (!queued) return;  // squeue did not answer: decide nothing now
    for (auto it = tracked.begin(); it != tracked.end();) {
      Tracked& t = it->second;
      const bool in_queue = !t.slurm.id.empty() && queued->count(t.slurm.id);
      // Gone from two answers in a row, over at least kGonePolls poll intervals, before it counts
      // as ended: an answer can miss a job that is still there (a controller under load, a job
      // between states: a job requeued by `scontrol requeue` was missing from two answers 2 s
      // apart on a loaded CI machine), and a job wrongly taken for ended is submitted again
      // beside itself.
      if (in_queue) {
        t.slurm.missing = 0;
        t.slurm.missing_since.reset();
      } else {
        ++t.slurm.missing;
        if (!t.slurm.missing_since) t.slurm.missing_since = Clock::now();
      }
      const bool gone = t.slurm.missing >= 2 &&
                        Clock::now() - *t.slurm.missing_since >= kGonePolls * options.poll_interval;
      const bool keep = in_queue || (!gone && !t.slurm.id.empty()) || ended(t, events);
      it = keep ? std::next(it) : tracked.erase(it);
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
    const auto version = modified(layout.records_path(run_id));
    if (!version || (t.curve.read_version && *t.curve.read_version == *version)) return;
    auto evals = read_trial_evals(layout.records_path(run_id), run_id);
    if (!evals) return;
    Curve& c = t.curve;
    c.read_version = version;
    if (!evals->empty() && (!c.published_step || evals->back().step > *c.published_step)) {
      if (c.new_eval_seen) c.eval_gap = now - *c.new_eval_seen;
      c.new_eval_seen = now;
      c.published_step = evals->back().step;
    }
    if (t.stop.step_at_request_unread) {
      t.stop.step_at_request = c.published_step;
      t.stop.step_at_request_unread = false;
    }
    events.updates.push_back({run_id, std::move(*evals)});
    try {
      records.ingest(run_id, t.slurm.attempt, /*series=*/false);  // progress for `sweep status`
    } catch (const std::exception&) {
    }
  }

  // ---- Stop requests

  // A trial reads its stop file after every evaluation, so it answers at its first evaluation
  // after the request. The grace starts when an evaluation published after the request reaches
  // the requested step, and lasts `stop_grace` plus the interval between its evaluations (that
  // evaluation may have been made just before the request was written). Past it the trial is
  // cancelled. Checked on every pass: a hung trial publishes nothing more.
  void check_stop_answered(Tracked& t, Clock::time_point now) {
    PendingStop& s = t.stop;
    const auto& published = t.curve.published_step;
    if (!s.request || t.state == TrialState::stop_forced || !published ||
        *published < s.request->step) {
      return;
    }
    if (s.step_at_request && *published <= *s.step_at_request) return;
    if (!s.due_since) s.due_since = now;
    const auto allowed = options.stop_grace + t.curve.eval_gap.value_or(Clock::duration::zero());
    if (now - *s.due_since < allowed) return;
    cancel_for_stop(t);
  }

  // What the trial has published when a request is written before this coordinator has read its
  // snapshot: its last evaluation's step, or, while the snapshot cannot be read, whatever the
  // first read finds.
  void note_step_at_request(Tracked& t) {
    t.stop.step_at_request.reset();
    t.stop.step_at_request_unread = false;
    if (!modified(layout.records_path(t.job.run_id))) return;  // nothing published yet
    const auto evals = read_trial_evals(layout.records_path(t.job.run_id), t.job.run_id);
    if (!evals) {
      t.stop.step_at_request_unread = true;
    } else if (!evals->empty()) {
      t.stop.step_at_request = evals->back().step;
    }
  }

  void request_stop(const std::string& run_id, const StopRequest& request) {
    write_stop_request(layout.stop_path(run_id), request);
    auto it = tracked.find(run_id);
    if (it == tracked.end()) return;
    Tracked& t = it->second;
    t.stop.request = request;
    t.stop.due_since.reset();
    if (t.curve.read_version) {
      t.stop.step_at_request = t.curve.published_step;
      t.stop.step_at_request_unread = false;
    } else {
      note_step_at_request(t);  // not read yet: what it has published may all predate the request
    }
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
