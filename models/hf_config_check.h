// A Hugging Face config.json against the network an experiment builds: the part every model
// family shares (reading the file with bounds, comparing its keys), so models/hf_bert_config.h
// and models/hf_gpt2_config.h only list their keys.
//
// The design choice for model.init_from (a save_pretrained folder): the experiment states the
// shape and config.json must agree with it; a folder of another shape is refused with every
// difference listed, naming the config key to change. The shape is never taken from the folder,
// so an experiment's run id and its TOML always say what network it trains.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace batchlab::models {

// A size of config.json, the experiment's value, and which experiment key sets it.
struct HfShapeKey {
  std::string key;
  double value = 0.0;
  std::string set_by;
  // Compared as the float32 the network holds (a LayerNorm eps: 1e-12 written by Python and by
  // batchlab may differ in their last printed digit).
  bool as_float32 = false;
};

// A key whose value is what batchlab's network computes (a word, a flag): a config.json giving
// another value describes a computation batchlab does not do. A key missing from config.json
// takes transformers' default, which must be this value.
struct HfFixedKey {
  std::string key;
  nlohmann::json value;
};

// The JSON object of the config.json at `path`. Throws InputError naming `path` when it cannot be
// read, is larger than any real config.json (1 MiB) or is no JSON object.
nlohmann::json read_hf_config(const std::string& path);

// One line per difference ("n_layer: config.json 4, the experiment 2 (model.arch = \"gpt2_tiny\")",
// "activation_function: config.json \"relu\", batchlab's GPT-2 computes only gelu_new"); empty
// when config.json describes the experiment's network. `network` names batchlab's network in the
// fixed keys' lines ("batchlab's GPT-2").
std::vector<std::string> hf_config_differences(const nlohmann::json& config,
                                               const std::vector<HfFixedKey>& fixed,
                                               const std::vector<HfShapeKey>& shape,
                                               const std::string& network);

// A config.json size as written: 128, not 128.0.
std::string hf_number(double value);

}  // namespace batchlab::models
