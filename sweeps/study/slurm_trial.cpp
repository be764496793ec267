#include "sweeps/study/slurm_trial.h"

#include <fmt/format.h>

#include "results/rows.h"
#include "sweeps/process.h"
#include "sweeps/slurm.h"
#include "sweeps/study/trial_source.h"

namespace batchlab::sweeps::study {

void SlurmJob::saw_queue(bool in_queue, SlurmClock::time_point now) {
  if (in_queue) {
    missing = 0;
    missing_since.reset();
    return;
  }
  ++missing;
  if (!missing_since) missing_since = now;
}

bool SlurmJob::gone(SlurmClock::time_point now, SlurmClock::duration poll_interval) const {
  return missing >= 2 && missing_since && now - *missing_since >= kGonePolls * poll_interval;
}

void SlurmJob::submitted(std::string job_id, std::string output_file,
                         std::optional<std::filesystem::file_time_type> records_now) {
  ++attempt;
  missing = 0;
  missing_since.reset();
  asked.clear();
  id = std::move(job_id);
  output = std::move(output_file);
  records_at_submit = records_now;
}

void PublishedCurve::read(std::optional<int64_t> last_step, SlurmClock::time_point now) {
  if (!last_step || (published_step && *last_step <= *published_step)) return;
  if (new_eval_seen) eval_gap = now - *new_eval_seen;
  new_eval_seen = now;
  published_step = last_step;
}

bool PendingStop::overdue(const PublishedCurve& curve, SlurmClock::duration grace,
                          SlurmClock::time_point now) {
  const auto& published = curve.published_step;
  if (!request || !published || *published < request->step) return false;
  if (step_at_request && *published <= *step_at_request) return false;  // predates the request
  if (!due_since) due_since = now;
  return now - *due_since >= grace + curve.eval_gap.value_or(SlurmClock::duration::zero());
}

const std::optional<std::set<std::string>>& SlurmQueueView::jobs(bool fresh) {
  const auto now = SlurmClock::now();
  if (!fresh && read_at_ && now - *read_at_ < poll_interval_) return jobs_;
  read_at_ = now;
  jobs_.reset();
  if (const auto entries = slurm_queue({job_name_})) {
    jobs_.emplace();
    for (const auto& entry : *entries) jobs_->insert(entry.job_id);
  }
  return jobs_;
}

std::optional<std::filesystem::file_time_type> file_modified(const std::string& path) {
  std::error_code ec;
  const auto t = std::filesystem::last_write_time(path, ec);
  if (ec) return std::nullopt;
  return t;
}

std::optional<std::vector<results::EvalRow>> read_new_snapshot(Tracked& t,
                                                               const std::string& records_path,
                                                               SlurmClock::time_point now) {
  const auto version = file_modified(records_path);
  if (!version || (t.curve.read_version && *t.curve.read_version == *version)) return std::nullopt;
  auto evals = read_trial_evals(records_path, t.job.run_id);
  if (!evals) return std::nullopt;
  t.curve.read_version = version;
  t.curve.read(evals->empty() ? std::nullopt : std::optional<int64_t>(evals->back().step), now);
  if (t.stop.step_at_request_unread) {
    t.stop.step_at_request = t.curve.published_step;
    t.stop.step_at_request_unread = false;
  }
  return evals;
}

void note_stop_request(Tracked& t, const StopRequest& request, const std::string& records_path) {
  PendingStop& s = t.stop;
  s.request = request;
  s.due_since.reset();
  s.step_at_request.reset();
  s.step_at_request_unread = false;
  if (t.curve.read_version) {
    s.step_at_request = t.curve.published_step;
    return;
  }
  if (!file_modified(records_path)) return;  // nothing published yet
  const auto evals = read_trial_evals(records_path, t.job.run_id);
  if (!evals) {
    s.step_at_request_unread = true;
  } else if (!evals->empty()) {
    s.step_at_request = evals->back().step;
  }
}

JobEvent job_event(const Tracked& t, std::string_view status) {
  JobEvent event;
  event.job = &t.job;
  event.attempt = static_cast<int>(t.slurm.attempt);
  event.status = std::string(status);
  return event;
}

NoResult no_result_kind(const Tracked& t, const std::string& status,
                        const std::optional<std::filesystem::file_time_type>& records_now) {
  if (t.state == TrialState::submitted && records_now == t.slurm.records_at_submit) {
    return NoResult::vanished;
  }
  const bool crashed = status != results::run_status::kPreempted &&
                       status != results::run_status::kRunning && !status.empty();
  return crashed ? NoResult::crashed : NoResult::preempted;
}

std::string output_says(const std::string& path) {
  std::error_code ec;
  if (path.empty()) return "";
  if (!std::filesystem::exists(path, ec)) {
    return fmt::format(
        "its Slurm output file {} does not exist (is its folder writable from the compute "
        "nodes?)",
        path);
  }
  const std::string tail = tail_lines(path, 3);
  return tail.empty() ? fmt::format("its Slurm output file {} is empty", path)
                      : fmt::format("its Slurm output file {} ends: {}", path, tail);
}

std::string why_no_result(const Tracked& t, const std::optional<std::string>& recorded_error,
                          bool vanished) {
  if (vanished) {
    return fmt::format(
        "Slurm job {} ended without publishing any records (batchlab did not run on the node, "
        "or could not write its run folder); {}",
        t.slurm.id, output_says(t.slurm.output));
  }
  return fmt::format("Slurm job {}: {}; {}{}", t.slurm.id,
                     recorded_error.value_or("ended without a result"), output_says(t.slurm.output),
                     t.slurm.asked.empty() ? "" : "; " + t.slurm.asked);
}

std::string exhausted(const Tracked& t, int max_attempts, const std::string& last) {
  return fmt::format(
      "its Slurm jobs ended without a result {} times, the bound (--max-attempts {}); the last: "
      "{}. Fix the cause, then `batchlab sweep submit` with a larger --max-attempts runs it "
      "again",
      t.slurm.attempt, max_attempts, last);
}

std::string sbatch_stop_message(const SbatchError& e) {
  return fmt::format(
      "{}\nThe study stopped with nothing lost; `batchlab sweep submit` again resumes it{}.",
      e.what(),
      e.failure() == SbatchFailure::limit
          ? " once the queue has room (or with a smaller --max-parallel)"
          : "");
}

std::string forced_stop_error(const Tracked& t, SlurmClock::duration grace) {
  return fmt::format(
      "{}; it had not answered its stop file {} s after publishing an evaluation past the "
      "request (and one interval between its evaluations), and its Slurm job {} was cancelled",
      t.stop.request->at_step(t.stop.request->step),
      std::chrono::duration_cast<std::chrono::seconds>(grace).count(), t.slurm.id);
}

std::string vanishing_stop_message(int in_a_row, const std::string& why) {
  return fmt::format(
      "{} trial jobs in a row ended without publishing any records; the last, {}. The "
      "coordinator stops instead of submitting more (docs/sweeps.md, \"What a site needs\"): "
      "make batchlab and LibTorch visible on the compute nodes and the run folder writable, "
      "then `batchlab sweep submit` again",
      in_a_row, why);
}

std::string give_up_reason(const Tracked& t, NoResult kind, int retries, int max_attempts,
                           const std::string& why) {
  return kind == NoResult::crashed && t.slurm.attempt < max_attempts
             ? fmt::format("crashed, after {} retries: {}", retries, why)
             : exhausted(t, max_attempts, why);
}

TrialEnd interrupted(const std::string& run_id, std::string why) {
  TrialEnd end;
  end.run_id = run_id;
  end.status = std::string(results::run_status::kPreempted);
  end.error = std::move(why);
  return end;
}

}  // namespace batchlab::sweeps::study
