// When the trainer evaluates: every `train.eval_every` epochs (or `train.eval_every_steps` steps),
// or, with train.evals_per_octave = n > 0, on a log-spaced grid of update counts (contract C1): the
// distinct values of ceil(2^(k / n)), k = 0, 1, 2, ..., i.e. 1, 2, 3, 4, 6, 8, 11, 16, ... for n
// = 2. Log spacing gives a steps-to-target curve the same resolution at every scale (studies
// interpolate the crossing in log-step). The run's final step is evaluated on top of either
// schedule (the trainer's final evaluation), so the grid needs no end.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/config/batch_phases.h"
#include "core/config/train_config.h"

namespace batchlab::train {

// The grid points ceil(2^(k / per_octave)) that do not exceed `max_step`, ascending, without
// repeats. per_octave must be > 0.
std::vector<int64_t> log_spaced_steps(int64_t per_octave, int64_t max_step);

class EvalSchedule {
 public:
  EvalSchedule(const config::TrainConfig& train, int64_t steps_per_epoch);
  // Under a batch schedule: train.eval_every counts epochs of examples seen (an evaluation after
  // the first update that reaches each multiple of eval_every x the training examples);
  // eval_every_steps and evals_per_octave keep counting updates.
  EvalSchedule(const config::TrainConfig& train, const config::BatchPhases& phases);

  // Whether the state after `updates_done` updates is evaluated (the final step aside).
  bool due(int64_t updates_done);

 private:
  int64_t per_octave_ = 0;
  int64_t every_steps_ = 1;    // eval_every (or eval_every_steps) in steps, when per_octave_ is 0
  std::vector<int64_t> grid_;  // log-spaced points up to grid_end_
  int64_t grid_end_ = 0;
  std::optional<config::BatchPhases> phases_;  // eval_every in examples under a batch schedule
  int64_t every_examples_ = 0;
};

}  // namespace batchlab::train
