// The coordinator of a scaling study: opens cells as their centres become known, runs each cell's
// learning-rate bracket through a TrialSource (real `batchlab train` processes, or a fake one in
// tests), applies the race and pruning as evaluations arrive, and records cells and trials in the
// study tables of the sweep database.
//
// Resume: everything a decision needs is stored (study_cells: centre, cap and warmup of each open
// cell; study_trials: every decided trial and its outcome; evals: the rows of every ended trial),
// and the decisions are pure functions of those rows (sweeps/study/decisions.h). A new engine over
// the same database therefore reopens the same cells, rebuilds the same trials (same configs, same
// run ids), runs again only the trials without an outcome, and decides the same next points: after
// a kill -9 the same trials run, none twice.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "results/rows.h"
#include "results/store.h"
#include "sweeps/study/decisions.h"
#include "sweeps/study/plan.h"
#include "sweeps/study/schedule.h"

namespace batchlab::sweeps::study {

// Evaluations of a running trial: every row so far (replaces what was known of it).
struct TrialUpdate {
  std::string run_id;
  std::vector<results::EvalRow> evals;
};

// A trial whose run ended (for good, or to be run again: failed, preempted).
struct TrialEnd {
  std::string run_id;
  std::string status;  // the run's status: done, diverged, stopped, failed, preempted, oom
  std::string error;
  std::optional<std::string> stop_reason;  // runs.stop_reason of a stopped run
  std::optional<int64_t> last_step;        // updates trained
  std::vector<results::EvalRow> evals;
};

struct SourceEvents {
  std::vector<TrialUpdate> updates;
  std::vector<TrialEnd> ended;
};

// Where trials run.
class TrialSource {
 public:
  virtual ~TrialSource() = default;
  virtual size_t slots() const = 0;  // trials at once
  virtual size_t running() const = 0;
  // Starts `trial` with `stop` in place before its first step. A trial whose run already ended
  // (a resumed study) is reported by the next poll() as ended, without running again.
  virtual void start(const Job& trial, const std::optional<StopRequest>& stop) = 0;
  // Asks a running trial to stop (a later request replaces an earlier one).
  virtual void request_stop(const std::string& run_id, const StopRequest& stop) = 0;
  // What happened since the last call; may wait a little when nothing did.
  virtual SourceEvents poll() = 0;
  // The user asked the study to stop: start nothing more.
  virtual bool stopping() const { return false; }
};

class StudyObserver {
 public:
  virtual ~StudyObserver() = default;
  virtual void cell_opened(const results::StudyCellRow&, size_t /*cell*/) {}
  virtual void trial_started(const Job&, const results::StudyTrialRow&, size_t /*cell*/) {}
  virtual void trial_ended(const Job&, const results::StudyTrialRow&, size_t /*cell*/) {}
  // Its run ended without a result (failed after its retries, or preempted).
  virtual void trial_interrupted(const Job&, const TrialEnd&, size_t /*cell*/) {}
  virtual void stop_requested(const Job&, const StopRequest&) {}
  virtual void cell_completed(const results::StudyCellRow&, size_t /*cell*/) {}
  // A batch ladder stopped for the group of lines `group` (their coordinates without the batch
  // and the seed); `why` as results::describe_ladder_stop says it.
  virtual void ladder_stopped(const std::string& /*group*/, const std::string& /*why*/) {}
};

struct StudySummary {
  size_t cells = 0, reached = 0, censored = 0, searching = 0;
  size_t beyond_ladder = 0;  // planned cells a batch ladder stopped below: never opened, not owed
  size_t trials = 0;         // decided in all
  size_t started = 0;        // started by this run
  size_t unfinished = 0;     // trials whose run failed (the study cannot finish their cells)
  int64_t samples_trained = 0;
  int64_t cap_samples = 0;  // the same trials, each run to its cap
  bool stopped = false;     // the user stopped it
};

class StudyEngine {
 public:
  // `policy`: the order pending trials start in (sweeps/study/schedule.h).
  StudyEngine(const StudyPlan& plan, results::Store& store, std::string sweep_id,
              TrialSource& source, StudyObserver& observer,
              SchedulePolicy policy = SchedulePolicy::shortest_study);
  ~StudyEngine();
  StudyEngine(const StudyEngine&) = delete;
  StudyEngine& operator=(const StudyEngine&) = delete;

  // Runs the study until every cell is complete, or nothing more can run (failed trials, a stop).
  StudySummary run();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The study's metric of an evaluation row (val_acc or val_loss).
std::optional<double> study_metric(const results::EvalRow& row, const std::string& metric);
// A trial's curve of that metric, in the rows' order.
Curve curve_of(const std::vector<results::EvalRow>& evals, const std::string& metric);

}  // namespace batchlab::sweeps::study
