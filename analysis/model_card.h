// model.json, the card `batchlab export` writes beside an exported state_dict (model.pt ->
// model.json): which run and which of its checkpoints the weights are, the run's canonical
// configuration, the commit and LibTorch it ran with, and its metrics (the last evaluation, the
// evaluation at the exported step, every milestone), read from the sweep database.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace batchlab::analysis {

// What export needs from the runs table before it can pick and load a checkpoint.
struct RunToExport {
  std::string run_id;
  std::string status;
  std::string config_toml;  // canonical TOML, as the run recorded it
  std::string sweep_name;   // "" for a run of `batchlab train` outside a sweep
};

// Throws InputError for a run id the database does not hold (naming the database and how to list
// its runs) or a run without a recorded configuration; results::StoreInputError for a missing
// database file.
RunToExport read_run_to_export(const std::string& db_path, const std::string& run_id);

// The exported weights, as the card describes them.
struct ExportedWeightsInfo {
  std::string weights_file;                // the state_dict written
  std::string names;                       // "torchvision", "huggingface" or "batchlab"
  int64_t tensors = 0;                     // entries in it
  std::string checkpoint;                  // --checkpoint as given: final, best or a step
  std::string checkpoint_file;             // the file the weights came from
  int64_t step = 0;                        // updates done when it was written
  std::optional<std::string> best_metric;  // best: the selection metric and its value
  std::optional<double> best_value;
  // Which PyTorch module takes the weights (models::PytorchModule): in words, as Python code
  // ("" when no library builds one), and whether a strict load into it is promised.
  std::string module;
  std::string module_python;
  bool module_promised = false;
};

// The card's JSON text (an object, pretty-printed).
std::string model_card_json(const std::string& db_path, const RunToExport& run,
                            const ExportedWeightsInfo& weights);

// Writes `json` to `path` atomically (core/atomic_file.h: nothing is left behind when it fails).
// Throws InputError when the path cannot take a file, Error when the write fails.
void write_model_card(const std::string& path, const std::string& json);

// Where the card goes for a state_dict at `weights_path`: the same name with .json (model.pt ->
// model.json; model -> model.json). Throws InputError when that is the weights file itself.
std::string model_card_path(const std::string& weights_path);

}  // namespace batchlab::analysis
