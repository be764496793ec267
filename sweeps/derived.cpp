#include "sweeps/derived.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/config/batch_geometry.h"
#include "core/config/batch_phases.h"
#include "core/config/batch_schedule.h"
#include "core/optim/lr_schedule.h"

namespace batchlab::sweeps {

DerivedValues derive_values(const config::ExperimentConfig& config,
                            std::optional<int64_t> train_size, std::vector<Diagnostic>& out) {
  DerivedValues d;
  const auto& batch = config.batch;
  try {
    d.peak_lr = optim::scaled_peak_lr(config.optim, batch.global);
  } catch (const ConfigError& e) {
    out.insert(out.end(), e.diagnostics().begin(), e.diagnostics().end());
    return d;
  }
  // Jobs run as one process each: world size 1 (the divisibility rule was checked with it).
  d.micro_batch = config::micro_batch(batch.global, batch.micro, 1);
  d.accum_steps = config::accumulation(batch.global, batch.micro, 1).value_or(0);
  if (!train_size) {
    // A schedule given in steps needs no data size: its length, and a warmup in steps or as a
    // fraction, follow from the config alone (paper specs plan before the data is there).
    const auto& sc = config.schedule;
    if (sc.steps && !sc.warmup_epochs && !sc.budget_s) {
      try {
        const optim::LrSchedule schedule(sc, d.peak_lr, /*steps_per_epoch=*/1);
        d.warmup_steps = schedule.warmup_steps();
        d.total_steps = schedule.total_steps();
      } catch (const ConfigError& e) {
        out.insert(out.end(), e.diagnostics().begin(), e.diagnostics().end());
      }
    }
    return d;
  }
  d.train_size = train_size;
  if (batch.global > *train_size) {
    out.push_back(Diagnostic{
        "", 0, 0, "batch.global", std::to_string(batch.global),
        fmt::format("larger than the training set ({} examples): no full batch per epoch; lower "
                    "batch.global or use more data (data.train_size)",
                    *train_size)});
    return d;
  }
  try {
    const auto g = config::make_batch_geometry(batch.global, batch.micro, 1, *train_size);
    d.micro_batch = g.micro;
    d.accum_steps = g.accum;
    d.steps_per_epoch = g.steps_per_epoch;
    d.dropped_per_epoch = g.dropped_per_epoch;
    if (config::has_batch_schedule(batch)) {
      // The trainer's rule (core/train/trainer.cpp): the phases of config/batch_phases.h and the
      // LR schedule by examples seen, so the steps are those of the batches the run takes, not
      // the run's examples over the final batch (which counts too few steps and a too short
      // warmup).
      const config::BatchPhases phases(config::batch_points(batch), batch.micro, 1, *train_size);
      const optim::LrSchedule schedule(config.schedule, config.optim, phases);
      d.warmup_steps = schedule.warmup_steps();
      d.total_steps = schedule.total_steps();
      config::validate_batch_schedule_length(batch, schedule.total_examples(), out);
      d.phases = phases;
      return d;
    }
    const optim::LrSchedule schedule(config.schedule, d.peak_lr, g.steps_per_epoch);
    d.warmup_steps = schedule.warmup_steps();
    d.total_steps = schedule.total_steps();
  } catch (const ConfigError& e) {
    out.insert(out.end(), e.diagnostics().begin(), e.diagnostics().end());
  } catch (const InputError& e) {
    out.push_back(Diagnostic{"", 0, 0, "batch", "", e.what()});
  }
  return d;
}

int64_t samples_after(const DerivedValues& derived, int64_t global_batch, int64_t steps) {
  if (derived.phases) return derived.phases->examples_before(std::max<int64_t>(steps, 0));
  return steps * global_batch;
}

}  // namespace batchlab::sweeps
