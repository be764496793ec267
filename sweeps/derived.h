// What a job's configuration implies before it runs: the peak learning rate after the scaling
// rule, the batch geometry (accumulation, steps per epoch, samples an incomplete last batch drops)
// and the schedule's warmup and total steps. Computed with the trainer's own functions
// (optim::scaled_peak_lr, optim::LrSchedule, config::make_batch_geometry), so `sweep plan` shows
// exactly what the run will record, without loading any data. Under a batch-size schedule
// (config/batch_schedule.h) the steps come from the phases of config/batch_phases.h, as the
// trainer counts them; the peak rate, the geometry and steps per epoch are the final batch's, which
// the runs table records for such a run (each phase's peak follows optim.scaling from its batch).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config/batch_phases.h"
#include "core/config/experiment_config.h"
#include "core/errors.h"

namespace batchlab::sweeps {

struct DerivedValues {
  double peak_lr = 0.0;
  int64_t micro_batch = 0;
  int64_t accum_steps = 0;
  // From here on: unknown (nullopt) when the training set size is not known.
  std::optional<int64_t> train_size;
  std::optional<int64_t> steps_per_epoch;
  std::optional<int64_t> dropped_per_epoch;
  std::optional<int64_t> warmup_steps;  // 0 under a wall-clock budget
  std::optional<int64_t> total_steps;   // 0 under a wall-clock budget
  // A batch-size schedule's phases (nullopt for a fixed batch, or when the size is unknown).
  std::optional<config::BatchPhases> phases;
};

// The examples a job sees in its first `steps` updates: steps x `global_batch` for a fixed batch,
// the phases' count under a batch-size schedule (where steps x the final batch overcounts: the
// ramp of experiments/configs/fashion_mnist_batch_warmup.toml to 256 sees 174,048 examples in
// 1,325 steps, not 339,200).
int64_t samples_after(const DerivedValues& derived, int64_t global_batch, int64_t steps);

// `train_size`: samples in the training split the job will use (nullopt: unknown). Problems the
// config rules cannot see, because they need the data size (a global batch larger than the
// training set, a schedule inconsistent with the resulting step count), are appended to `out` as
// diagnostics keyed by full path.
DerivedValues derive_values(const config::ExperimentConfig& config,
                            std::optional<int64_t> train_size, std::vector<Diagnostic>& out);

}  // namespace batchlab::sweeps
