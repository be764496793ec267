// A fake TrialSource for the study engine's tests: every trial "trains" along a curve the test
// gives (the study metric as a function of the trial's learning rate, batch and step), one
// evaluation per poll on the real log-spaced grid, and ends as `batchlab train` would: at the
// target (stop_at_target), at a stop request's step (status stopped, error "REASON at step N"), on
// a NaN metric (diverged) or at its cap (done). Given a Store, an ended trial's run and evaluation
// rows are written there, as the real source's ingest does (a resumed engine reads them back).
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "results/rows.h"
#include "results/store.h"
#include "sweeps/study/engine.h"

namespace batchlab::sweeps::testing {

// ceil(2^(k/n)) for k = 0, 1, ... up to `cap`, distinct, plus `cap` (contract C1).
inline std::vector<int64_t> eval_grid(int64_t cap, int64_t per_octave) {
  std::set<int64_t> steps;
  for (int64_t k = 0;; ++k) {
    const auto s = static_cast<int64_t>(
        std::ceil(std::pow(2.0, static_cast<double>(k) / static_cast<double>(per_octave)) - 1e-9));
    if (s > cap) break;
    steps.insert(s);
  }
  steps.insert(cap);
  return {steps.begin(), steps.end()};
}

class FakeTrialSource : public study::TrialSource {
 public:
  static constexpr double kSecondsPerStep = 0.01;  // evals' wall_s and runs' durations

  // metric(base_lr, global_batch, step); NaN = the run diverges there.
  using Metric = std::function<double(double, int64_t, int64_t)>;

  FakeTrialSource(size_t slots, Metric metric, config::Target goal, int64_t per_octave,
                  results::Store* store = nullptr)
      : slots_(slots),
        metric_(std::move(metric)),
        goal_(std::move(goal)),
        per_octave_(per_octave),
        store_(store) {}

  size_t slots() const override { return slots_; }
  size_t running() const override { return running_.size(); }

  void start(const Job& trial, const std::optional<StopRequest>& stop) override {
    Run run;
    run.job = trial;
    run.grid = eval_grid(trial.derived.total_steps.value(), per_octave_);
    run.stop = stop;
    if (stop) requests[trial.run_id].push_back(*stop);
    ++starts[trial.run_id];
    start_order.push_back(trial.run_id);
    running_[trial.run_id] = std::move(run);
  }

  void request_stop(const std::string& run_id, const StopRequest& stop) override {
    requests[run_id].push_back(stop);
    auto it = running_.find(run_id);
    if (it != running_.end()) it->second.stop = stop;
  }

  // Every running trial evaluates once more.
  study::SourceEvents poll() override {
    study::SourceEvents events;
    for (auto it = running_.begin(); it != running_.end();) {
      Run& run = it->second;
      const int64_t step = run.grid[run.next++];
      const double value = metric_(run.job.base_lr, run.job.global_batch, step);
      results::EvalRow row;
      row.run_id = run.job.run_id;
      row.step = step;
      row.val_acc = value;
      row.wall_s = kSecondsPerStep * static_cast<double>(step);
      run.evals.push_back(row);
      std::string status, error;
      std::optional<std::string> stop_reason;
      if (std::isnan(value)) {
        // As the trainer: a run that diverges stops at that step, between evaluations, and
        // records no evaluation there.
        status = "diverged";
        error = "loss is nan";
        run.evals.pop_back();
      } else if (goal_.at_least_as_good(value, goal_.value)) {
        status = "done";
      } else if (run.stop && step >= run.stop->step) {
        status = "stopped";
        error = run.stop->at_step(step);
        stop_reason = run.stop->reason;
      } else if (run.next == run.grid.size()) {
        status = "done";
      }
      if (status.empty()) {
        events.updates.push_back({run.job.run_id, run.evals});
        ++it;
        continue;
      }
      last_step[run.job.run_id] = step;
      final_status[run.job.run_id] = status;
      if (store_ != nullptr) {
        results::RunRow run_row;
        run_row.run_id = run.job.run_id;
        run_row.status = "running";
        run_row.optimizer = run.job.optimizer;
        run_row.global_batch = run.job.global_batch;
        run_row.seed = run.job.seed;
        run_row.base_lr = run.job.base_lr;
        run_row.started_at = "2026-01-01T00:00:00.000Z";
        store_->upsert_run(run_row);
        // A duration of kSecondsPerStep per step (what a replay of the records times).
        const double seconds = kSecondsPerStep * static_cast<double>(step);
        store_->set_run_status(
            run_row.run_id, status,
            error.empty() ? std::nullopt : std::optional<std::string>(error),
            fmt::format("2026-01-01T{:02}:{:02}:{:06.3f}Z", static_cast<int>(seconds / 3600),
                        static_cast<int>(std::fmod(seconds, 3600) / 60), std::fmod(seconds, 60.0)),
            stop_reason);
        store_->delete_rows_after(run_row.run_id, -1);
        store_->write_evals(run.evals);
      }
      events.ended.push_back({run.job.run_id, status, error, stop_reason, step, run.evals});
      it = running_.erase(it);
    }
    return events;
  }

  std::map<std::string, int> starts;
  std::vector<std::string> start_order;
  std::map<std::string, std::vector<StopRequest>> requests;
  std::map<std::string, int64_t> last_step;
  std::map<std::string, std::string> final_status;

 private:
  struct Run {
    Job job;
    std::vector<int64_t> grid;
    size_t next = 0;
    std::optional<StopRequest> stop;
    std::vector<results::EvalRow> evals;
  };
  size_t slots_;
  Metric metric_;
  config::Target goal_;
  int64_t per_octave_;
  results::Store* store_;
  std::map<std::string, Run> running_;
};

}  // namespace batchlab::sweeps::testing
