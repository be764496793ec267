#include "core/train/eval_schedule.h"

#include <algorithm>
#include <cmath>

namespace batchlab::train {

std::vector<int64_t> log_spaced_steps(int64_t per_octave, int64_t max_step) {
  std::vector<int64_t> out;
  const auto n = static_cast<double>(per_octave);
  for (int64_t k = 0;; ++k) {
    // exp2 of an integer exponent is exact, and 2^(k/n) is irrational otherwise: ceil is safe.
    const auto s = static_cast<int64_t>(std::ceil(std::exp2(static_cast<double>(k) / n)));
    if (s > max_step) break;
    if (out.empty() || s != out.back()) out.push_back(s);
  }
  return out;
}

EvalSchedule::EvalSchedule(const config::TrainConfig& train, int64_t steps_per_epoch)
    : per_octave_(train.evals_per_octave),
      every_steps_(train.eval_every_steps > 0
                       ? train.eval_every_steps
                       : std::max<int64_t>(1, std::llround(train.eval_every *
                                                           static_cast<double>(steps_per_epoch)))) {
}

EvalSchedule::EvalSchedule(const config::TrainConfig& train, const config::BatchPhases& phases)
    : EvalSchedule(train, phases.final_geometry().steps_per_epoch) {
  if (per_octave_ > 0 || train.eval_every_steps > 0) return;
  phases_ = phases;
  every_examples_ = std::max<int64_t>(
      1, std::llround(train.eval_every * static_cast<double>(phases.train_size())));
}

bool EvalSchedule::due(int64_t updates_done) {
  if (phases_) {
    // The update that crosses a multiple of the spacing in examples seen.
    return updates_done > 0 && phases_->examples_before(updates_done) / every_examples_ >
                                   phases_->examples_before(updates_done - 1) / every_examples_;
  }
  if (per_octave_ <= 0) return updates_done % every_steps_ == 0;
  // The grid grows by doubling, as far as the run gets (a budgeted run has no known end).
  if (updates_done > grid_end_) {
    grid_end_ = std::max<int64_t>(2 * grid_end_, updates_done);
    grid_ = log_spaced_steps(per_octave_, grid_end_);
  }
  return std::binary_search(grid_.begin(), grid_.end(), updates_done);
}

}  // namespace batchlab::train
