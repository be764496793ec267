// A study trial's life on Slurm as the coordinator tracks it (sweeps/study/slurm_source.h): its
// named states, what its job, its published curve and its pending stop show, and the decisions
// over them that need no Slurm command: when a job missing from squeue counts as ended, when a
// stop request is overdue, why a job that left the queue has no result, and the messages each
// outcome records; beside them the one squeue answer all trials share (SlurmQueueView) and the
// reading of what a trial published. SlurmTrialSource does the transitions; the decisions here are
// functions of the fields and the clock they are given, so they are tested without Slurm
// (tests/sweeps/study/slurm_trial_test.cpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/stop_request.h"
#include "results/rows.h"
#include "sweeps/expand.h"
#include "sweeps/local_runner.h"
#include "sweeps/slurm_commands.h"
#include "sweeps/study/engine.h"

namespace batchlab::sweeps::study {

using SlurmClock = std::chrono::steady_clock;

// The transitions, one function each in SlurmTrialSource:
//   submit()               -> submitted    (from any state but stop_forced)
//   start(), job queued    -> adopted      (an earlier coordinator's job)
//   start(), unreadable    -> unfolded     (folded before anything is decided)
//   cancel_for_stop()      -> stop_forced  (its stop left unanswered past the grace)
// and once its job has left the queue (ended()): settle() (a result), force_stop() (stopped for
// its request), resubmit_unfolded(), or for a job without a result (NoResult) give_up_vanishing()
// (the coordinator stops), leave() (the coordinator is stopping), retry() or give_up().
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

// A job missing from squeue counts as ended after this many poll intervals (and two answers).
inline constexpr int kGonePolls = 5;

struct SlurmJob {
  std::string id;
  std::string output;   // Slurm's output file
  int64_t attempt = 0;  // Slurm jobs submitted for the trial in all (runs.attempts)
  std::optional<std::filesystem::file_time_type> records_at_submit;  // its snapshot then
  int missing = 0;                                      // squeue answers in a row without it
  std::optional<SlurmClock::time_point> missing_since;  // the first of those answers
  std::string asked;  // what `squeue -t all -j` last said of it, missing from the listing

  // One answer of squeue: in it, or not.
  void saw_queue(bool in_queue, SlurmClock::time_point now);
  // Gone from two answers in a row, over at least kGonePolls poll intervals, before it counts as
  // ended: an answer can miss a job that is still there (a controller under load, a job between
  // states: a job requeued by `scontrol requeue` was missing from two answers 2 s apart on a
  // loaded CI machine), and a job wrongly taken for ended is submitted again beside itself.
  bool gone(SlurmClock::time_point now, SlurmClock::duration poll_interval) const;
  // A new submission: nothing missing yet.
  void submitted(std::string job_id, std::string output_file,
                 std::optional<std::filesystem::file_time_type> records_now);
};

// What the trial has published, read every curve interval.
struct PublishedCurve {
  SlurmClock::time_point next_read;
  std::optional<std::filesystem::file_time_type> read_version;  // the records last read
  std::optional<int64_t> published_step;                        // their last evaluation's step
  std::optional<SlurmClock::time_point> new_eval_seen;  // when the last new evaluation was read
  std::optional<SlurmClock::duration> eval_gap;         // between the last two new evaluations

  // A snapshot read at `now` whose evaluations end at `last_step` (nullopt: none yet).
  void read(std::optional<int64_t> last_step, SlurmClock::time_point now);
};

// The latest stop request written for the trial, and whether it has had its chance to answer.
struct PendingStop {
  std::optional<StopRequest> request;
  std::optional<int64_t> step_at_request;           // published when it was written
  bool step_at_request_unread = false;              // ... not readable then: the first read says
  std::optional<SlurmClock::time_point> due_since;  // first evaluation published after it

  // A trial reads its stop file after every evaluation, so it answers at its first evaluation
  // after the request. The grace starts when an evaluation published after the request reaches
  // the requested step, and lasts `grace` plus the interval between its evaluations (that
  // evaluation may have been made just before the request was written). True once it is past:
  // the trial has not answered. Checked on every pass: a hung trial publishes nothing more.
  bool overdue(const PublishedCurve& curve, SlurmClock::duration grace, SlurmClock::time_point now);
};

struct Tracked {
  Job job;
  TrialState state = TrialState::adopted;
  SlurmJob slurm;
  PublishedCurve curve;
  PendingStop stop;
  int crashes = 0;
  int fold_errors = 0;
};

// The job ids of the study's queue (its job name), asked at most once per poll interval for all
// trials: one squeue per interval however many trials run.
class SlurmQueueView {
 public:
  SlurmQueueView(std::string job_name, SlurmClock::duration poll_interval)
      : job_name_(std::move(job_name)), poll_interval_(poll_interval) {}
  // The last answer, or a new one when it is older than the interval or `fresh` is asked for;
  // nullopt when squeue does not answer.
  const std::optional<std::set<std::string>>& jobs(bool fresh);

 private:
  std::string job_name_;
  SlurmClock::duration poll_interval_;
  std::optional<std::set<std::string>> jobs_;
  std::optional<SlurmClock::time_point> read_at_;
};

// The modification time of a trial's published records (nullopt: none yet).
std::optional<std::filesystem::file_time_type> file_modified(const std::string& path);

// Reads the trial's published records when they changed since the last read: the curve, and a
// pending stop's step at the request when that was unreadable, follow them. Returns the
// evaluations; nullopt when nothing is new or the snapshot cannot be read yet.
std::optional<std::vector<results::EvalRow>> read_new_snapshot(Tracked& t,
                                                               const std::string& records_path,
                                                               SlurmClock::time_point now);

// A stop request written for `t` now: its grace starts afresh and counts only evaluations
// published after it. When the coordinator has not read the trial's snapshot yet (an adopted
// trial may be far past the requested step) it is read from `records_path` now; while it cannot
// be read, the first read says.
void note_stop_request(Tracked& t, const StopRequest& request, const std::string& records_path);

// The event the observer gets for the trial's current job.
JobEvent job_event(const Tracked& t, std::string_view status);

// Why `t`'s job, gone from the queue, has no result: the run's folded status ("" when nothing
// was folded), and whether its snapshot changed since its submission (`records_now`).
NoResult no_result_kind(const Tracked& t, const std::string& status,
                        const std::optional<std::filesystem::file_time_type>& records_now);

// What Slurm's output file of a job says, for a diagnosis.
std::string output_says(const std::string& path);

// Why a job that left the queue has no result, for the log and the diagnosis.
std::string why_no_result(const Tracked& t, const std::optional<std::string>& recorded_error,
                          bool vanished);

// A trial's attempts are spent (`max_attempts`); `last` says how the last one ended.
std::string exhausted(const Tracked& t, int max_attempts, const std::string& last);

// The coordinator stops when sbatch will not take a trial: what it says.
std::string sbatch_stop_message(const SbatchError& e);

// runs.error of a trial cancelled for leaving its stop request unanswered past `grace`.
std::string forced_stop_error(const Tracked& t, SlurmClock::duration grace);

// The coordinator stops after `in_a_row` jobs that never ran; `why` is the last one's diagnosis.
std::string vanishing_stop_message(int in_a_row, const std::string& why);

// runs.error of a trial given up after its job ended without a result (`kind`, `why`): its
// crashes used up the retries, or its attempts are spent.
std::string give_up_reason(const Tracked& t, NoResult kind, int retries, int max_attempts,
                           const std::string& why);

// A trial the coordinator leaves to the next one: `preempted` with `why` (the engine records
// nothing for it).
TrialEnd interrupted(const std::string& run_id, std::string why);

}  // namespace batchlab::sweeps::study
