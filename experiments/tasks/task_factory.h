// Builds the task a configuration asks for: the one place that maps data sets and models to a Task.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/config/experiment_config.h"
#include "core/config/loader.h"
#include "core/train/task.h"

namespace batchlab::experiments {

// Loads the data, builds the model (after the caller seeded the RNG) with ghost batch norm over
// groups of `bn_group` samples (batch.bn_group; 0 = the whole micro-batch), loads its starting
// weights from model.init_from when set (initial_weights.h), and wires them into a task whose
// batches live on `device` (this rank's, train.device resolved). `notes`, when given, receives
// what the run should tell the user about the starting weights (what a non-strict load left at
// its initialization).
std::unique_ptr<train::Task> make_task(const config::ModelConfig& model,
                                       const config::DataConfig& data, int64_t bn_group,
                                       torch::Device device,
                                       std::vector<std::string>* notes = nullptr);

// Valid values of data.dataset, for config validation.
std::vector<std::string> dataset_names();

// Gives the config loader the registries' names: architectures (models/registry.h) and data sets,
// and which of them are text, so a bad name or an image model on text is refused before anything
// is loaded.
void add_registry_names(config::LoadOptions& options);

// Gives the config loader the training split's size where the [data] section tells it without
// loading anything (data::image_training_examples), so the rules that need the steps per epoch
// run with the other validation (core/config/run_length.h). Reads file headers: for a command
// that loads one config, not for planning a sweep of thousands.
void add_data_sizes(config::LoadOptions& options);

}  // namespace batchlab::experiments
