// Sizes of a BERT network (Devlin et al. 2019) and the presets of the models table, from the
// experiment's [model] section, plus an analytic cost model that allocates nothing (so
// `batchlab models` can price bert_large without building it).
//
// Presets (layers / hidden / heads; intermediate = 4 x hidden, type vocabulary 2, LayerNorm eps
// 1e-12 as in the original BERT): bert_tiny 2/128/2, bert_mini 4/256/4, bert_small 4/512/8,
// bert_medium 8/512/8 (the compact models of Turc et al. 2019), bert_base 12/768/12, bert_large
// 24/1024/16.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/model_config.h"

namespace batchlab::models {

struct BertConfig {
  std::string name = "bert_base";  // the preset (model.arch) it came from; used in messages
  int64_t num_layers = 12;
  int64_t hidden = 768;
  int64_t num_heads = 12;
  int64_t intermediate = 3072;  // FFN inner width
  int64_t vocab_size = 30522;
  int64_t max_seq_len = 512;    // rows of the position embedding
  int64_t type_vocab_size = 2;  // segments (sentence A / B)
  double layer_norm_eps = 1e-12;
  // Hidden dropout (after the embeddings and after every residual branch) and attention-probability
  // dropout; BERT uses 0.1 for both, Cramming 0.
  double dropout = 0.1;
  double attention_dropout = 0.1;
  // Pre-LN blocks (Cramming, Geiping & Goldstein 2022: LayerNorm before attention and before the
  // FFN, plus one after the last layer) instead of post-LN (original BERT: LayerNorm after each
  // residual add).
  bool norm_first = false;
  // Pooler (dense + tanh on token 0) and the next-sentence head on top of it.
  bool next_sentence = false;

  int64_t head_dim() const { return hidden / num_heads; }
};

// One row of the models table for the BERT family.
struct BertPreset {
  std::string name;  // model.arch
  std::string description;
  int64_t num_layers = 0;
  int64_t hidden = 0;
  int64_t num_heads = 0;
};

// bert_tiny .. bert_large, smallest first.
const std::vector<BertPreset>& bert_presets();

// Whether `arch` names a BERT preset.
bool is_bert_arch(const std::string& arch);

// The preset model.arch with model.vocab_size (or `vocab_size` when > 0: the trained
// tokenizer's), model.max_seq_len, model.norm_first, model.next_sentence and model.dropout (hidden
// and attention).
// Throws InputError for an arch that is no BERT preset (listing the valid ones) or unusable sizes.
BertConfig bert_config_from(const config::ModelConfig& model, int64_t vocab_size = 0);

// Throws InputError naming the first unusable field: sizes < 1, hidden not divisible by num_heads,
// dropout outside [0, 1), a non-positive LayerNorm eps.
void validate_bert_config(const BertConfig& config);

// BERT's masking rate (15% of the tokens are selected for the MLM loss).
inline constexpr double kBertMlmFraction = 0.15;

// Positions per sequence of length `seq_len` that the MLM head runs on at BERT's 15% rate,
// rounded to nearest (19 at 128 tokens, 77 at 512; BERT's data pipeline caps them at 20 and 80).
int64_t default_mlm_positions(int64_t seq_len);

// Forward multiply-accumulates of one sequence of `seq_len` tokens, counting only matrix products:
//   per layer   Q, K, V and output projections 4 T H^2, attention scores Q K^T and the weighted sum
//               of values 2 T^2 H, FFN 2 T H I;
//   pooler      H^2, and the next-sentence head 2 H (only with next_sentence);
//   MLM head    on `mlm_positions` tokens only (the model evaluates the head at the masked
//               positions alone; see masked_lm.h): transform H^2 + decoder H V each.
// Embedding lookups, LayerNorm, GELU, softmax, biases and residual adds are O(T H) and left out.
// Convention for the models table: mlm_positions = default_mlm_positions(T). With mlm_positions = T
// (the decoder on every token) 6 x this equals "6 x parameters x tokens + attention" up to the
// position/segment embeddings, biases and norms; with the masked fraction it agrees with
// 6 x non-embedding parameters x tokens + attention within ~4% for bert_base and bert_large
// (the small presets' cost is dominated by the 30k-word decoder, which neither convention prices
// the same way). Throws InputError for seq_len < 1, seq_len > max_seq_len or a bad mlm_positions.
int64_t bert_forward_macs(const BertConfig& config, int64_t seq_len, int64_t mlm_positions);

}  // namespace batchlab::models
