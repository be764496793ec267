// Batch-size schedules ("batch-size warmup"): the global batch grows at given numbers of examples
// seen, as in GPT-3's batch ramp, Smith et al. 2017 ("Don't decay the learning rate, increase the
// batch size") and Merrill et al. 2025 (batch-size warmup saves 43% of OLMo 1B's steps). Two forms
// in [batch], at most one of them:
//
//   schedule = [[0, 64], [200000, 128], [600000, 256]]   from 0 examples on 64, from 200k on 128,
//                                                        from 600k on 256 (= batch.global)
//   ramp_start = 64, ramp_double_every = 200000          64, doubling every 200k examples until
//                                                        batch.global (the last doubling capped)
//
// batch.global is the batch the run ends at (the largest: what a sweep sweeps and the runs table
// records); with `schedule` it may be left out and is then the last point's batch.
//
// A point takes effect at the first step boundary at or after its examples (an update is never
// split). Everything else follows examples seen, not steps (batch_phases.h,
// core/optim/lr_schedule.h): the run length and the warmup (schedule.epochs, warmup_epochs: epochs
// x training examples; warmup_fraction of that), the decay and the step-decay milestones, and
// train.eval_every; the peak learning rate of each phase follows optim.scaling from the phase's
// batch, and the batch rules (batch_rules.h: beta2 by its half-life, weight decay by the batch) are
// re-resolved at each phase. Keys counted in steps keep counting updates (train.eval_every_steps,
// evals_per_octave, checkpoint_every, log_every, layer_stats_every); keys that would fix a length
// in steps of an unknown batch (schedule.steps, schedule.warmup_steps) and a wall-clock budget are
// refused.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/codecs.h"
#include "core/config/experiment_config.h"
#include "core/config/loader.h"
#include "core/config/read_context.h"
#include "core/errors.h"

namespace batchlab::config {

// A bound on schedule points in examples: with at most 23 doublings (kMaxBatch = 2^23) a ramp's
// points stay far inside 64 bits, and no run sees that many examples.
inline constexpr int64_t kMaxScheduleExamples = 100'000'000'000'000'000;  // 1e17

// batch.schedule: an array of [examples, global] integer pairs.
struct BatchScheduleCodec : LeafCodec {
  bool read(const toml::node& node, std::vector<BatchPoint>& out, ReadContext& ctx,
            const std::string& path) const;
  std::string write(const std::vector<BatchPoint>& points) const;
};

// The points a run follows: batch.schedule, the ramp's points, or {{0, batch.global}} for a
// fixed batch. Assumes a valid config (validate_batch_schedule).
std::vector<BatchPoint> batch_points(const BatchConfig& batch);

// Whether the batch changes during the run (a schedule or a ramp is set).
bool has_batch_schedule(const BatchConfig& batch);

// The default of batch.global when absent: the last point of batch.schedule (0 without one, which
// the field rule reports).
int64_t default_global_batch(const ExperimentConfig& config);

// The rules of the schedule's keys, as diagnostics keyed by full path: one form only; the ramp's
// two keys together, starting below batch.global; the schedule's first point at 0, examples and
// batches strictly increasing, its last batch = batch.global; every batch a whole world_size x
// micro x accumulation with bn_group dividing its micro-batch; and the keys a changing batch
// cannot go with (schedule.steps, schedule.warmup_steps, schedule.budget).
void validate_batch_schedule(const ExperimentConfig& config, int64_t world_size,
                             std::vector<Diagnostic>& out, const ReadContext* read = nullptr);

// The run's length in examples for a batch schedule: schedule.epochs x `train_examples`, rounded.
int64_t scheduled_run_examples(const ScheduleConfig& schedule, int64_t train_examples);

// Points at or past the run's end (`run_examples`), and a ramp that reaches batch.global only
// after it: diagnostics keyed by batch.schedule[i] or batch.ramp_double_every.
void validate_batch_schedule_length(const BatchConfig& batch, int64_t run_examples,
                                    std::vector<Diagnostic>& out);

// The rule above for a whole config, when options.training_examples tells the training split's
// size before the data is loaded (as run_length.h's validate_data_size_rules); skipped when a
// diagnostic found before (`so_far`) is about one of the keys it relates.
void validate_batch_schedule_size_rules(const ExperimentConfig& config, const LoadOptions& options,
                                        const std::vector<Diagnostic>& so_far,
                                        std::vector<Diagnostic>& out,
                                        const ReadContext* read = nullptr);

}  // namespace batchlab::config
