#include "sweeps/study/simulation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "core/errors.h"

namespace batchlab::sweeps::study {

namespace {

// What defines a trial across databases: its cell and its rate. The cell is its id where the
// recorded trial's cell is one of the plan's (the same spec: the id hashes the config without the
// rate, so two LARS lines that differ only in the trust coefficient stay apart), else its
// optimizer, batch and seed.
using TrialKey = std::tuple<std::string, int64_t, int64_t, double>;

TrialKey key_of(const std::string& cell, int64_t batch, int64_t seed, double lr) {
  // Rates are centre x factor^k: round to 12 significant digits so both sides agree.
  const double rounded = std::stod(fmt::format("{:.12g}", lr));
  return {cell, batch, seed, rounded};
}

// The plan's cell of a trial job: the cell whose coordinates are the trial's without the rate.
std::map<std::vector<std::string>, std::string> cells_by_coordinates(const StudyPlan& plan) {
  std::map<std::vector<std::string>, std::string> out;
  for (size_t c = 0; c < plan.cells.size(); ++c)
    out[plan.job(c).coordinates] = plan.cells[c].cell_id;
  return out;
}

struct RecordedTrial {
  std::vector<results::EvalRow> evals;
  double duration_s = 0.0;
  std::string status, error;
  std::optional<std::string> stop_reason;
  int64_t last_step = 0;
};

class RecordedTrialSource : public TrialSource {
 public:
  RecordedTrialSource(const StudyPlan& plan, results::Store& recorded, size_t workers)
      : slots_(workers), cells_(cells_by_coordinates(plan)) {
    std::set<std::string> planned;
    for (const auto& cell : plan.cells) planned.insert(cell.cell_id);
    std::map<std::string, std::string> outcomes, cell_of_run;
    for (const auto& t : recorded.read_study_trials()) {
      outcomes[t.run_id] = t.outcome;
      if (planned.count(t.cell_id) > 0) cell_of_run[t.run_id] = t.cell_id;
    }
    for (const auto& run : recorded.list_runs()) {
      if (!run.optimizer || !run.global_batch || !run.seed || !run.base_lr) continue;
      const auto start = run.started_at ? results::utc_seconds(*run.started_at) : std::nullopt;
      const auto end = run.finished_at ? results::utc_seconds(*run.finished_at) : std::nullopt;
      if (!start || !end) {
        throw InputError(
            fmt::format("run {}: no readable runs.started_at and finished_at, so "
                        "its duration is unknown",
                        run.run_id));
      }
      RecordedTrial t;
      t.evals = recorded.read_evals(run.run_id);
      t.duration_s = *end - *start;
      t.status = run.status;
      t.error = run.error.value_or("");
      t.stop_reason = run.stop_reason;
      // A database from before schema version 4 has no stop_reason: its study_trials outcome
      // (pruned, stopped_by_race) is the reason the run stopped for.
      if (!t.stop_reason && run.status == results::run_status::kStopped) {
        auto outcome = outcomes.find(run.run_id);
        if (outcome != outcomes.end()) t.stop_reason = outcome->second;
      }
      t.last_step = t.evals.empty() ? 0 : t.evals.back().step;
      const auto cell = cell_of_run.find(run.run_id);
      const std::string& where = cell != cell_of_run.end() ? cell->second : *run.optimizer;
      record_[key_of(where, *run.global_batch, *run.seed, *run.base_lr)] = std::move(t);
    }
    if (record_.empty()) {
      throw InputError("the recorded study has no runs with their optimizer, batch, seed and rate");
    }
  }

  size_t slots() const override { return slots_; }
  size_t running() const override { return running_.size(); }

  void start(const Job& trial, const std::optional<StopRequest>& stop) override {
    ++started_;
    first_start_ = std::min(first_start_, now_);
    Running r;
    r.run_id = trial.run_id;
    r.start = now_;
    r.stop = stop;
    r.stop_time = now_;
    auto it = record_.end();
    std::vector<std::string> coordinates = trial.coordinates;
    if (!coordinates.empty()) coordinates.pop_back();  // the rate
    if (auto cell = cells_.find(coordinates); cell != cells_.end()) {
      it = record_.find(key_of(cell->second, trial.global_batch, trial.seed, trial.base_lr));
    }
    if (it == record_.end()) {
      it = record_.find(key_of(trial.optimizer, trial.global_batch, trial.seed, trial.base_lr));
    }
    if (it == record_.end()) {
      ++missing_;
      r.missing = true;
    } else {
      r.record = &it->second;
      // What this trial cost in the recording, run to its own end.
      full_samples_ += it->second.last_step * trial.global_batch;
      full_s_ += std::max(0.0, it->second.duration_s);
    }
    running_.push_back(std::move(r));
  }

  void request_stop(const std::string& run_id, const StopRequest& stop) override {
    for (auto& r : running_) {
      if (r.run_id != run_id) continue;
      r.stop = stop;
      r.stop_time = now_;
    }
  }

  SourceEvents poll() override {
    SourceEvents events;
    if (running_.empty()) return events;
    // The next moment anything happens: an evaluation or an end.
    double next = std::numeric_limits<double>::infinity();
    for (const auto& r : running_) next = std::min(next, next_event(r));
    now_ = next;
    for (auto it = running_.begin(); it != running_.end();) {
      if (next_event(*it) > now_) {
        ++it;
        continue;
      }
      if (finish(*it, events)) {
        busy_s_ += now_ - it->start;
        last_end_ = std::max(last_end_, now_);
        it = running_.erase(it);
      } else {
        events.updates.push_back({it->run_id, delivered(*it)});
        ++it;
      }
    }
    return events;
  }

  double makespan() const { return started_ == 0 ? 0.0 : last_end_ - first_start_; }
  double busy() const { return busy_s_; }
  double overhead() const { return overhead_s_; }
  int64_t full_samples() const { return full_samples_; }
  double full_seconds() const { return full_s_; }
  size_t started() const { return started_; }
  size_t missing() const { return missing_; }

 private:
  struct Running {
    std::string run_id;
    double start = 0.0;
    const RecordedTrial* record = nullptr;
    bool missing = false;
    size_t next = 0;  // evaluations delivered
    std::optional<StopRequest> stop;
    double stop_time = 0.0;  // when the request was made
  };

  double eval_time(const Running& r, size_t k) const { return r.start + r.record->evals[k].wall_s; }

  double next_event(const Running& r) const {
    if (r.missing) return now_;
    if (r.next < r.record->evals.size()) return eval_time(r, r.next);
    return r.start + std::max(r.record->duration_s, 0.0);
  }

  std::vector<results::EvalRow> delivered(const Running& r) const {
    return {r.record->evals.begin(), r.record->evals.begin() + static_cast<std::ptrdiff_t>(r.next)};
  }

  // Delivers what is due at now_; true when the trial ended.
  bool finish(Running& r, SourceEvents& events) {
    if (r.missing) {
      events.ended.push_back({r.run_id, "done", "", std::nullopt, 0, {}});
      return true;
    }
    const auto& evals = r.record->evals;
    if (r.next < evals.size()) {
      const auto& e = evals[r.next++];
      const bool stops =
          r.stop && e.step >= r.stop->step && eval_time(r, r.next - 1) >= r.stop_time;
      if (!stops) return false;
      // What the record spent besides training (start-up, every evaluation, the final test
      // evaluation, exit), counted in full for a trial stopped early: an upper bound of its own.
      overhead_s_ += std::max(0.0, r.record->duration_s - r.record->evals.back().wall_s);
      events.ended.push_back(
          {r.run_id, "stopped", r.stop->at_step(e.step), r.stop->reason, e.step, delivered(r)});
      return true;
    }
    // The record's own end: as it ended.
    events.ended.push_back({r.run_id, r.record->status, r.record->error, r.record->stop_reason,
                            r.record->last_step, delivered(r)});
    return true;
  }

  size_t slots_;
  std::map<std::vector<std::string>, std::string> cells_;
  std::map<TrialKey, RecordedTrial> record_;
  std::vector<Running> running_;
  double now_ = 0.0, first_start_ = std::numeric_limits<double>::infinity(), last_end_ = 0.0;
  double busy_s_ = 0.0, overhead_s_ = 0.0, full_s_ = 0.0;
  int64_t full_samples_ = 0;
  size_t started_ = 0, missing_ = 0;
};

}  // namespace

SimulationResult simulate_study(const StudyPlan& plan, results::Store& recorded,
                                const std::string& scratch_db, size_t workers,
                                SchedulePolicy policy) {
  RecordedTrialSource source(plan, recorded, workers);
  results::Store scratch(scratch_db);
  StudyObserver quiet;
  StudyEngine engine(plan, scratch, "simulation", source, quiet, policy);
  const StudySummary summary = engine.run();
  SimulationResult out;
  out.policy = policy;
  out.workers = workers;
  out.makespan_s = source.makespan();
  out.busy_s = source.busy();
  out.stopped_overhead_s = source.overhead();
  out.recorded_samples = source.full_samples();
  out.recorded_s = source.full_seconds();
  out.trials = source.started();
  out.missing = source.missing();
  out.cells = summary.cells;
  out.reached = summary.reached;
  out.censored = summary.censored;
  out.samples = summary.samples_trained;
  out.cell_rows = scratch.read_study_cells("simulation");
  return out;
}

}  // namespace batchlab::sweeps::study
