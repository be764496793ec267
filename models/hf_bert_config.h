// A Hugging Face BERT's config.json (BertConfig.to_json_string in transformers) against batchlab's
// BertConfig: what `batchlab export --format hf` writes, and what `model.init_from = "DIR"` (a
// save_pretrained folder) checks before loading the folder's weights.
//
// The design choice for init_from: the experiment states the shape (model.arch's preset, the
// tokenizer's vocabulary, model.max_seq_len) and config.json must agree with it; a folder of
// another shape is refused with every difference listed, naming the config key to change. The
// shape is never taken from the folder, so an experiment's run id and its TOML always say what
// network it trains.
#pragma once

#include <string>
#include <vector>

#include "models/bert_config.h"

namespace batchlab::models {

// config.json for `config` (model_type "bert", architectures BertForMaskedLM, or
// BertForPreTraining with next_sentence; hidden_act "gelu", BERT's exact erf GELU, which is
// batchlab's; pad_token_id 0, batchlab's [PAD]), as pretty-printed JSON.
std::string hf_bert_config_json(const BertConfig& config);

// The differences between the config.json at `path` and `config`, one line each
// ("num_hidden_layers: config.json 4, the experiment 2 (model.arch = \"bert_tiny\")"), empty
// when the folder's network is the experiment's. Also lists what batchlab's BERT cannot compute
// (model_type other than bert, hidden_act other than gelu, position_embedding_type other than
// absolute). Throws InputError naming `path` when it cannot be read or is no JSON object.
std::vector<std::string> hf_bert_config_differences(const std::string& path,
                                                    const BertConfig& config);

}  // namespace batchlab::models
