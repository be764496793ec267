// The runs-row columns a resolved config determines, in one projection for the row a sweep plans
// (sweep plan / run / submit) and the row `batchlab train` writes when the run starts, so the two
// always agree. Callers add what the config does not fix: the sweep id and the derived geometry
// (the planner), host, git sha and LibTorch version (the trainer's command).
#pragma once

#include <cstdint>
#include <string>

#include "core/config/experiment_config.h"
#include "results/rows.h"

namespace batchlab::sweeps {

// The configuration columns of a runs row, compact enough to keep per planned job.
struct ConfigColumns {
  std::string model;      // model.arch
  std::string dataset;    // data.dataset
  std::string optimizer;  // optim.name
  std::string scaling;    // optim.scaling
  double base_lr = 0.0;   // optim.base_lr
  int64_t seed = 0;       // train.seed
  int64_t global_batch = 0;
  int64_t bn_group = 0;
};

ConfigColumns config_columns(const config::ExperimentConfig& config);

// Writes the columns into `row` (leaving its other fields alone).
void apply_columns(const ConfigColumns& columns, results::RunRow& row);

// Run id, canonical TOML and the configuration columns.
results::RunRow run_row_of(const config::ExperimentConfig& config);

}  // namespace batchlab::sweeps
