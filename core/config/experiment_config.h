// Typed experiment configuration: the contract between the TOML at the edge and the components.
// Each component receives only its own struct. Every field here is resolved: the loader
// (core/config/loader.h) fills optimizer-dependent defaults, so canonical TOML and the run id
// always see concrete values. Keys and meanings follow ../shared/DESIGN.md "Configuration".
//
// One header per section (model_config.h, data_config.h, ...), so a component includes only its own
// struct and an edit to one section recompiles only what uses it; this header is the aggregate.
#pragma once

#include <cstdint>

#include "core/config/batch_config.h"
#include "core/config/data_config.h"
#include "core/config/model_config.h"
#include "core/config/optim_config.h"
#include "core/config/schedule_config.h"
#include "core/config/train_config.h"

namespace batchlab::config {

inline constexpr int64_t kSchemaVersion = 1;

struct ExperimentConfig {
  int64_t schema_version = kSchemaVersion;
  ModelConfig model;
  DataConfig data;
  BatchConfig batch;
  OptimConfig optim;
  ScheduleConfig schedule;
  TrainConfig train;
};

}  // namespace batchlab::config
