// A run's length and warmup in optimizer steps, and the rules that need them. A schedule in epochs
// (or a warmup in epochs) has a length in steps only once the training set's size is known:
// steps per epoch = floor(training examples / batch.global), the batch geometry's count
// (core/config/batch_geometry.h). The LR schedule (core/optim/lr_schedule.h) computes its steps
// here, and validation runs these rules before anything is loaded when the caller can tell the
// training set's size from the [data] section (LoadOptions::training_examples), so a warmup longer
// than the run is reported with its file position and every other problem, not after the run's
// banner. Where only loading the data tells the size (image folders, text shards), the schedule
// reports it when it is built, from the same rules.
#pragma once

#include <cstdint>
#include <vector>

#include "core/config/experiment_config.h"
#include "core/config/loader.h"
#include "core/config/read_context.h"
#include "core/errors.h"

namespace batchlab::config {

struct RunLength {
  int64_t total_steps = 0;
  int64_t warmup_steps = 0;
};

// The steps of a schedule that is not a wall-clock budget, at `steps_per_epoch` (> 0 whenever the
// schedule uses epochs): schedule.steps, or epochs x steps per epoch rounded; the warmup likewise,
// or warmup_fraction x the run.
RunLength run_length(const ScheduleConfig& schedule, int64_t steps_per_epoch);

// What the steps per epoch rule out, as diagnostics keyed by full path: epochs that round to no
// step, and a warmup longer than the run where the two are in different units (warmup_steps with
// epochs, warmup_epochs with steps; in the same unit validate_schedule reports it without the
// data size). Nothing for a budgeted schedule. With `read`, a rule is skipped when one of its keys
// failed to read.
void validate_run_length(const ScheduleConfig& schedule, int64_t steps_per_epoch,
                         std::vector<Diagnostic>& out, const ReadContext* read = nullptr);

// The rules above for a whole config, when options.training_examples tells the size of its
// training split and the keys they relate are free of other problems (`so_far`, the diagnostics
// found before: a rule built on a key already reported would only repeat it).
void validate_data_size_rules(const ExperimentConfig& config, const LoadOptions& options,
                              const std::vector<Diagnostic>& so_far, std::vector<Diagnostic>& out,
                              const ReadContext* read = nullptr);

}  // namespace batchlab::config
