#include "sweeps/run_row.h"

#include "core/config/loader.h"

namespace batchlab::sweeps {

ConfigColumns config_columns(const config::ExperimentConfig& config) {
  ConfigColumns c;
  c.model = config.model.arch;
  c.dataset = config.data.dataset;
  c.optimizer = config.optim.name;
  c.scaling = config.optim.scaling;
  c.base_lr = config.optim.base_lr;
  c.seed = config.train.seed;
  c.global_batch = config.batch.global;
  c.bn_group = config.batch.bn_group;
  return c;
}

void apply_columns(const ConfigColumns& columns, results::RunRow& row) {
  row.model = columns.model;
  row.dataset = columns.dataset;
  row.optimizer = columns.optimizer;
  row.scaling = columns.scaling;
  row.base_lr = columns.base_lr;
  row.seed = columns.seed;
  row.global_batch = columns.global_batch;
  row.bn_group = columns.bn_group;
}

results::RunRow run_row_of(const config::ExperimentConfig& config) {
  results::RunRow row;
  row.config_toml = config::to_canonical_toml(config);
  row.run_id = config::run_id_of_canonical(*row.config_toml);
  apply_columns(config_columns(config), row);
  return row;
}

}  // namespace batchlab::sweeps
