// A Hugging Face GPT-2's config.json (GPT2Config.to_json_string in transformers) against
// batchlab's Gpt2Config: what `batchlab export --format hf` writes for a causal-LM run, and what
// `model.init_from = "DIR"` (a GPT2LMHeadModel save_pretrained folder) checks before loading the
// folder's weights. As for BERT (models/hf_config_check.h), the experiment states the shape and
// the folder must agree with it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/gpt2_config.h"

namespace batchlab::models {

// The token ids config.json names: GPT-2's <|endoftext|> is both bos and eos; batchlab's
// documents end in [SEP] (experiments/data/mlm_token_stream.h), so the exporter passes that id.
struct Gpt2SpecialTokens {
  int64_t bos = 0;
  int64_t eos = 0;
  int64_t pad = 0;
};

// config.json for `config` (model_type "gpt2", architectures GPT2LMHeadModel, activation_function
// "gelu_new", n_inner null = 4 x n_embd, tied embeddings, the three dropouts model.dropout), as
// pretty-printed JSON.
std::string hf_gpt2_config_json(const Gpt2Config& config, const Gpt2SpecialTokens& tokens);

// The differences between the config.json at `path` and `config`, one line each
// ("n_layer: config.json 4, the experiment 2 (model.arch = \"gpt2_tiny\")"), empty when the
// folder's network is the experiment's. Also lists what batchlab's GPT-2 does not compute:
// model_type other than gpt2, activation_function other than gelu_new, unscaled or layer-scaled
// attention (scale_attn_weights false, scale_attn_by_inverse_layer_idx true), cross-attention,
// untied output layer, an n_inner other than 4 x n_embd. Throws InputError naming `path` when it
// cannot be read or is no JSON object.
std::vector<std::string> hf_gpt2_config_differences(const std::string& path,
                                                    const Gpt2Config& config);

}  // namespace batchlab::models
