#include "core/config/batch_phases.h"

#include <algorithm>

#include "core/config/preconditions.h"

namespace batchlab::config {

BatchPhases::BatchPhases(const std::vector<BatchPoint>& points, int64_t micro, int64_t world,
                         int64_t train_size)
    : train_size_(train_size) {
  expect(!points.empty() && points.front().examples == 0, "BatchPhases",
         "a batch schedule starts with a point at 0 examples (validated by batch_schedule.h)");
  for (const BatchPoint& point : points) {
    BatchPhase p;
    p.point_examples = point.examples;
    p.geometry = make_batch_geometry(point.global, micro, world, train_size);
    if (!phases_.empty()) {
      const BatchPhase& prev = phases_.back();
      const int64_t steps =
          steps_to_see(point.examples - prev.start_examples, prev.geometry.global);
      p.start_step = prev.start_step + steps;
      p.start_examples = prev.start_examples + steps * prev.geometry.global;
      // The new phase reads on from where the previous phase's last batch ended.
      DataPosition at{prev.start_epoch, prev.start_offset};
      if (steps > 0) {
        at = position_in(prev, p.start_step - 1);
        at.offset += prev.geometry.global;
      }
      p.start_epoch = at.epoch;
      p.start_offset = at.offset;
    }
    phases_.push_back(p);
  }
}

size_t BatchPhases::phase_index(int64_t step) const {
  // The last phase starting at or before `step`: among phases of no update (equal start steps)
  // the later one, whose batch that update takes.
  const auto after =
      std::upper_bound(phases_.begin(), phases_.end(), step,
                       [](int64_t s, const BatchPhase& p) { return s < p.start_step; });
  return static_cast<size_t>(std::max<std::ptrdiff_t>(0, after - phases_.begin() - 1));
}

int64_t BatchPhases::examples_before(int64_t step) const {
  const BatchPhase& p = phase(step);
  return p.start_examples + (step - p.start_step) * p.geometry.global;
}

int64_t BatchPhases::steps_to_reach(int64_t examples) const {
  if (examples <= 0) return 0;
  // The last phase that starts with fewer examples seen; the run reaches `examples` inside it.
  size_t k = 0;
  for (size_t i = 0; i < phases_.size(); ++i) {
    if (phases_[i].start_examples < examples) k = i;
  }
  const BatchPhase& p = phases_[k];
  return p.start_step + steps_to_see(examples - p.start_examples, p.geometry.global);
}

DataPosition fixed_batch_position(const BatchGeometry& g, int64_t step) {
  expect(g.steps_per_epoch > 0 && step >= 0, "fixed_batch_position",
         "a geometry with at least one update per epoch and a step >= 0");
  return {step / g.steps_per_epoch, (step % g.steps_per_epoch) * g.global};
}

DataPosition BatchPhases::position_in(const BatchPhase& p, int64_t step) const {
  const int64_t global = p.geometry.global;
  const int64_t i = step - p.start_step;
  // Updates left in the epoch the phase starts in, then whole epochs of steps_per_epoch each.
  const int64_t left = steps_per_epoch(train_size_ - p.start_offset, global);
  if (i < left) return {p.start_epoch, p.start_offset + i * global};
  // From the next epoch on, the phase reads as a fixed batch would from the start of an epoch.
  const DataPosition later = fixed_batch_position(p.geometry, i - left);
  return {p.start_epoch + 1 + later.epoch, later.offset};
}

DataPosition BatchPhases::position(int64_t step) const { return position_in(phase(step), step); }

}  // namespace batchlab::config
