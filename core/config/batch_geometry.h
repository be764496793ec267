// The batch geometry: how a global batch is split over devices and accumulated micro-batches, and
// how many full batches an epoch holds. One torch-free rule (as learning_rate.h and run_length.h)
// that config validation, the run length's rules, the sweep plan (sweeps/derived.h), the trainer
// (core/train/data_order.h) and `batchlab bench` (experiments/bench/throughput.h, which takes the
// accumulation count and derives the micro-batch) all call, so that none of them works it out on
// its own.
//
//   global = world x micro x accumulation      micro 0 means global / world (no accumulation)
//   steps per epoch = floor(training examples / global); the rest of an epoch is dropped
//
// Validation (validation.cpp: validate_batch_geometry) reports a global batch that these numbers
// do not divide, naming all three, before anything is allocated.
#pragma once

#include <cstdint>
#include <optional>

namespace batchlab::config {

struct BatchGeometry {
  int64_t global = 0;
  int64_t micro = 0;
  int64_t accum = 0;
  int64_t world = 1;
  int64_t steps_per_epoch = 0;    // floor(train_size / global)
  int64_t dropped_per_epoch = 0;  // train_size - steps_per_epoch * global
};

// The micro-batch each device takes per forward pass: `micro`, or global / world when micro is 0
// (0 when that does not divide, or for a world below 1).
int64_t micro_batch(int64_t global, int64_t micro, int64_t world);

// Micro-batches accumulated per update, global / (world x micro batch); nullopt when that is not a
// whole number (or an input is not positive). Worked out without world x micro, which could
// overflow for absurd inputs.
std::optional<int64_t> accumulation(int64_t global, int64_t micro, int64_t world);

// The micro-batch when each device accumulates `accum` micro-batches per update, the way `batchlab
// bench --accum` states the split: global / (world x accum); 0 when that is not a whole number (or
// an input is not positive). The inverse of accumulation() for the same geometry.
int64_t micro_batch_for_accumulation(int64_t global, int64_t accum, int64_t world);

// Full global batches per epoch of `train_size` examples (0 when the batch is larger): also the
// full batches left in an epoch that `train_size` examples remain of.
int64_t steps_per_epoch(int64_t train_size, int64_t global);

// Updates of `global` examples each it takes to see at least `examples`: ceil(examples / global)
// (0 for no examples; the last update may run past them). A batch phase's length to its next
// point, a sample budget's steps, a study's cap from max_samples. Inline, so that
// results/batch_ladder.cpp (which DESIGN.md keeps from linking core/config) takes it from here.
inline int64_t steps_to_see(int64_t examples, int64_t global) {
  if (examples <= 0 || global <= 0) return 0;
  // ceil(examples / global), written so that no intermediate can overflow.
  return examples / global + (examples % global != 0 ? 1 : 0);
}

// The examples each device takes per update, micro x accumulation (global / world).
int64_t examples_per_device(const BatchGeometry& g);

// What every global batch must be a multiple of for whole micro-batches on every device: world x
// micro, or world when micro is 0 (each device then takes global / world in one micro-batch).
int64_t batch_multiple(int64_t micro, int64_t world);

// The whole geometry. Throws InputError when the training set is smaller than one global batch,
// and a ConfigError (an internal check: validation reports it first) when the batch does not
// divide.
BatchGeometry make_batch_geometry(int64_t global, int64_t micro, int64_t world, int64_t train_size);

}  // namespace batchlab::config
