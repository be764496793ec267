// What the trainer reports, and the interface it reports through. The trainer never sees SQL: the
// SQLite implementation lives outside core (cli/sqlite_reporter.h adapts it to results::Store), and
// a console implementation prints progress. Step numbering: a step row's `step` is the 0-based
// index of the optimizer update it describes; eval and milestone rows' `step` is the number of
// updates done.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/config/batch_geometry.h"

namespace batchlab::train {

// Values the trainer derives from the configuration and the data (recorded next to the run).
struct RunGeometry {
  // Global batch, micro-batch, accumulation, world size, steps per epoch and the examples an epoch
  // drops, as config::make_batch_geometry works them out (the final phase's under a batch
  // schedule).
  config::BatchGeometry batch;
  int64_t bn_group = 0;
  int64_t train_size = 0;
  int64_t total_steps = 0;  // 0 when the run length is a wall-clock budget (or schedule.steps = 0)
  bool budgeted = false;    // the run length is a wall-clock budget
  int64_t warmup_steps = 0;
  double peak_lr = 0.0;
  int64_t threads = 1;
  std::string device;
  std::optional<double> chance_acc;  // Task::chance_accuracy
};

struct StepRecord {
  int64_t step = 0;
  double epoch = 0.0;  // fractional epoch after this step
  int64_t samples = 0;
  double wall_s = 0.0;  // training clock after this step
  double lr = 0.0;
  double train_loss = 0.0;  // mean over the global batch, before the update
  double grad_norm = 0.0;   // L2 norm of the accumulated gradient, before clipping
  double samples_per_s = 0.0;
};

// One evaluation. A metric is absent where it was not measured: the validation split when the run
// has none (data.val_size = 0), the training sample and the test split at evaluations other than
// the last under train.full_eval = "final". "acc" is whatever the task's accuracy is (top-1, or
// masked-token accuracy for MLM).
struct EvalRecord {
  int64_t step = 0;
  double epoch = 0.0;
  int64_t samples = 0;
  double wall_s = 0.0;               // training clock
  std::optional<double> train_loss;  // eval mode, fixed training sample
  std::optional<double> train_acc;
  std::optional<double> val_loss;  // the held-out part of the training set
  std::optional<double> val_acc;
  std::optional<double> test_loss;
  std::optional<double> test_acc;
  std::optional<double> gap_loss;  // test_loss - train_loss
  std::optional<double> gap_acc;   // train_acc - test_acc
  double eval_s = 0.0;             // time the evaluation itself took
};

struct MilestoneRecord {
  std::string metric;
  double target = 0.0;
  int64_t step = 0;
  double epoch = 0.0;
  int64_t samples = 0;
  double wall_s = 0.0;   // training clock
  double total_s = 0.0;  // everything since the run started, evaluation included
};

// One parameter tensor's statistics at one step (the LARS paper's per-layer figure).
struct LayerStatRecord {
  int64_t step = 0;  // 0-based index of the update
  std::string layer;
  int64_t numel = 0;
  double weight_norm = 0.0;           // ||w|| before the update
  double grad_norm = 0.0;             // ||g|| of the accumulated gradient
  double ratio = 0.0;                 // ||w|| / ||g|| (infinite when ||g|| = 0)
  std::optional<double> trust_ratio;  // what LARS/LAMB applied; none for other optimizers
  double update_norm = 0.0;           // ||w_after - w_before||
};

struct NoiseRecord {
  int64_t step = 0;
  int64_t b_small = 0;
  int64_t b_big = 0;
  double g2 = 0.0;
  double trace_sigma = 0.0;
  double b_simple = 0.0;
};

// How a run ended. `diverged` is a result, `failed` a crash, `preempted` an interruption to resume,
// `stopped` the answer to a stop request (contract C2: a result, like diverged).
enum class RunStatus { done, diverged, failed, preempted, stopped };
const char* to_string(RunStatus status);

struct RunOutcome {
  RunStatus status = RunStatus::done;
  std::string error;                       // why, for every status but done
  std::optional<std::string> stop_reason;  // a stopped run's request (core/stop_request.h)
  int64_t last_step = 0;                   // updates done
  double train_s = 0.0;
};

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void run_started(const RunGeometry&) {}
  virtual void step(const StepRecord&) {}
  virtual void eval(const EvalRecord&) {}
  virtual void milestone(const MilestoneRecord&) {}
  virtual void layer_stats(const std::vector<LayerStatRecord>&) {}
  virtual void noise_scale(const NoiseRecord&) {}
  // Free-form notes the run should keep (e.g. "noise scale needs accumulation >= 2").
  virtual void note(const std::string&) {}
  virtual void run_finished(const RunOutcome&) {}
  // Blocks until everything reported so far is stored.
  virtual void flush() {}
};

// Forwards every call to each of its reporters, in order.
class FanoutReporter : public Reporter {
 public:
  void add(std::shared_ptr<Reporter> reporter) { reporters_.push_back(std::move(reporter)); }
  void run_started(const RunGeometry& g) override;
  void step(const StepRecord& r) override;
  void eval(const EvalRecord& r) override;
  void milestone(const MilestoneRecord& r) override;
  void layer_stats(const std::vector<LayerStatRecord>& rows) override;
  void noise_scale(const NoiseRecord& r) override;
  void note(const std::string& text) override;
  void run_finished(const RunOutcome& o) override;
  void flush() override;

 private:
  std::vector<std::shared_ptr<Reporter>> reporters_;
};

}  // namespace batchlab::train
