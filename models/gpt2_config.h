// Sizes of a GPT-2-family decoder (Radford et al. 2019) and the presets of the models table, from
// the experiment's [model] section, plus an analytic cost model that allocates nothing (so
// `batchlab models` can price gpt2_xl without building it).
//
// Presets (layers / hidden / heads; inner width 4 x hidden, LayerNorm eps 1e-5, GELU with the tanh
// approximation, GPT-2's "gelu_new"): gpt2_tiny 2/128/2 and gpt2_mini 4/256/4 (sizes that train on
// a 2-core CPU, the BERT compact models' shapes) and OpenAI's four releases, gpt2_small 12/768/12,
// gpt2_medium 24/1024/16, gpt2_large 36/1280/20, gpt2_xl 48/1600/25.
//
// What the experiment sets: the positions are model.max_seq_len (GPT-2's n_positions, 1024 in
// OpenAI's releases: set max_seq_len = 1024 for the GPT-2 shape), the vocabulary is the trained
// tokenizer's (GPT-2's byte-level BPE has 50257 tokens; batchlab trains a SentencePiece model),
// and model.dropout is GPT-2's embedding, residual and attention dropout (0.1 in GPT-2).
// model.norm_first and model.next_sentence are BERT's and mean nothing here: GPT-2 is pre-LN.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/model_config.h"

namespace batchlab::models {

struct Gpt2Config {
  std::string name = "gpt2_small";  // the preset (model.arch) it came from; used in messages
  int64_t num_layers = 12;          // n_layer
  int64_t hidden = 768;             // n_embd
  int64_t num_heads = 12;           // n_head
  int64_t vocab_size = 50257;
  int64_t max_positions = 1024;  // n_positions: rows of the position embedding
  double layer_norm_eps = 1e-5;
  double dropout = 0.1;  // embd_pdrop = resid_pdrop = attn_pdrop

  int64_t inner() const { return 4 * hidden; }  // n_inner = None in GPT2Config
  int64_t head_dim() const { return hidden / num_heads; }
};

// One row of the models table for the GPT-2 family.
struct Gpt2Preset {
  std::string name;  // model.arch
  std::string description;
  int64_t num_layers = 0;
  int64_t hidden = 0;
  int64_t num_heads = 0;
  // The reference context `batchlab models` prices it at (1024 for OpenAI's releases).
  int64_t positions = 0;
};

// gpt2_tiny .. gpt2_xl, smallest first.
const std::vector<Gpt2Preset>& gpt2_presets();

// Whether `arch` names a GPT-2 preset.
bool is_gpt2_arch(const std::string& arch);

// GPT-2's own vocabulary (its byte-level BPE), the size `batchlab models` prices the presets at.
inline constexpr int64_t kGpt2Vocabulary = 50257;

// The preset model.arch with model.vocab_size (or `vocab_size` when > 0: the trained tokenizer's),
// model.max_seq_len positions and model.dropout. Throws InputError for an arch that is no GPT-2
// preset (listing the valid ones) or unusable sizes.
Gpt2Config gpt2_config_from(const config::ModelConfig& model, int64_t vocab_size = 0);

// Throws InputError naming the first unusable field: sizes < 1, hidden not divisible by num_heads,
// dropout outside [0, 1), a non-positive LayerNorm eps.
void validate_gpt2_config(const Gpt2Config& config);

// Scalar parameters of make_gpt2's network, from the sizes alone (the output layer is the token
// embedding: counted once, as GPT-2's 124M counts it).
int64_t gpt2_parameters(const Gpt2Config& config);

// Forward multiply-accumulates of one sequence of `seq_len` tokens, counting only matrix products:
//   per layer   c_attn 3 T H^2, c_proj T H^2, scores Q K^T and the weighted sum of values 2 T^2 H
//               (the full square: the causal kernels skip at most half of it), MLP 2 T H (4H);
//   LM head     T H V: the next-token logits at every position.
// Embedding lookups, LayerNorm, GELU, softmax, biases and residual adds are O(T H) and left out.
// 6 x this is "6 x parameters x tokens + attention" up to the position embedding, biases and
// norms (Kaplan et al. 2020 count the same). Throws InputError for seq_len < 1 or above
// max_positions.
int64_t gpt2_forward_macs(const Gpt2Config& config, int64_t seq_len);

}  // namespace batchlab::models
