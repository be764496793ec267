// The phases of a run's batch: where each batch of a batch-size schedule (batch_schedule.h)
// starts in steps and in examples, its geometry, and where in the data order each update reads.
// One torch-free rule that the trainer, the LR schedule (core/optim/lr_schedule.h) and the
// evaluation schedule share, so that none of them works out steps from examples on its own. A
// fixed batch is one phase, and then every answer is the fixed-batch one (data_order.h).
//
// Phase k starts at the first step boundary at or after its point's examples E_k (an update is
// never split): with X_k the examples seen before its first update s_k,
//   s_(k+1) = s_k + max(0, ceil((E_(k+1) - X_k) / B_k)),   X_(k+1) = X_k + (s_(k+1) - s_k) B_k.
// Data position: an update's global batch is the slice [offset, offset + B) of its epoch's
// permutation (data_order.h); the next update starts where it ended, and a batch that no longer
// fits in the epoch's remaining examples starts the next epoch at 0 (the rest is dropped, as a
// fixed batch drops the incomplete last batch). So the order is a function of (data seed, examples
// seen), and resuming from any step finds the same batches.
#pragma once

#include <cstdint>
#include <vector>

#include "core/config/batch_config.h"
#include "core/config/batch_geometry.h"

namespace batchlab::config {

struct BatchPhase {
  int64_t point_examples = 0;  // the schedule point's examples
  int64_t start_step = 0;      // first update of the phase
  int64_t start_examples = 0;  // examples seen before that update (>= point_examples)
  BatchGeometry geometry;      // make_batch_geometry at the phase's batch
  int64_t start_epoch = 0;     // data position of the phase's first batch, before it rolls over
  int64_t start_offset = 0;
};

// Where an update's global batch lies: examples [offset, offset + global) of epoch `epoch`.
struct DataPosition {
  int64_t epoch = 0;
  int64_t offset = 0;
};

// Where update `step` of a run that keeps one batch from its first update lies: epoch
// step / steps_per_epoch, offset (step mod steps_per_epoch) x global. What BatchPhases::position
// answers for a single phase; the loader threads (experiments/data/batch_loader.h) plan a fixed
// batch's updates with it rather than working the position out themselves.
DataPosition fixed_batch_position(const BatchGeometry& g, int64_t step);

class BatchPhases {
 public:
  // `points` as batch_points() gives them (valid: first at 0, increasing); `micro` and `world`
  // as make_batch_geometry takes them. InputError (from make_batch_geometry) when a batch is
  // larger than the training set.
  BatchPhases(const std::vector<BatchPoint>& points, int64_t micro, int64_t world,
              int64_t train_size);

  // More than one phase: the batch changes during the run.
  bool scheduled() const { return phases_.size() > 1; }
  const std::vector<BatchPhase>& phases() const { return phases_; }
  int64_t train_size() const { return train_size_; }

  // The phase of update `step` (the last phase whose first update is at or before it) and its
  // index; a phase of no update is skipped.
  size_t phase_index(int64_t step) const;
  const BatchPhase& phase(int64_t step) const { return phases_[phase_index(step)]; }
  const BatchGeometry& geometry(int64_t step) const { return phase(step).geometry; }
  const BatchGeometry& final_geometry() const { return phases_.back().geometry; }

  // Examples seen by the updates before `step` (step >= 0).
  int64_t examples_before(int64_t step) const;
  // The first step before which at least `examples` were seen (0 for examples <= 0).
  int64_t steps_to_reach(int64_t examples) const;
  // Where update `step`'s global batch lies in the data order.
  DataPosition position(int64_t step) const;

 private:
  DataPosition position_in(const BatchPhase& p, int64_t step) const;

  std::vector<BatchPhase> phases_;
  int64_t train_size_ = 0;
};

}  // namespace batchlab::config
