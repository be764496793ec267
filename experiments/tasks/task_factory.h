// Builds the task a configuration asks for: the one place that maps data sets and models to a Task.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/config/experiment_config.h"
#include "core/train/task.h"

namespace batchlab::experiments {

// Loads the data, builds the model (after the caller seeded the RNG) with ghost batch norm over
// groups of `bn_group` samples (batch.bn_group; 0 = the whole micro-batch), and wires them into a
// task whose batches live on `device` (this rank's, train.device resolved).
std::unique_ptr<train::Task> make_task(const config::ModelConfig& model,
                                       const config::DataConfig& data, int64_t bn_group,
                                       torch::Device device);

// Valid values of data.dataset, for config validation.
std::vector<std::string> dataset_names();

}  // namespace batchlab::experiments
