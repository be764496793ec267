#include "models/bert_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "core/errors.h"

namespace batchlab::models {

const std::vector<BertPreset>& bert_presets() {
  static const std::vector<BertPreset> presets = {
      {"bert_tiny", "BERT, 2 layers, hidden 128, 2 heads (Turc et al. 2019 compact model)", 2, 128,
       2},
      {"bert_mini", "BERT, 4 layers, hidden 256, 4 heads (Turc et al. 2019 compact model)", 4, 256,
       4},
      {"bert_small", "BERT, 4 layers, hidden 512, 8 heads (Turc et al. 2019 compact model)", 4, 512,
       8},
      {"bert_medium", "BERT, 8 layers, hidden 512, 8 heads (Turc et al. 2019 compact model)", 8,
       512, 8},
      {"bert_base", "BERT-Base, 12 layers, hidden 768, 12 heads (Devlin et al. 2019)", 12, 768, 12},
      {"bert_large", "BERT-Large, 24 layers, hidden 1024, 16 heads (Devlin et al. 2019)", 24, 1024,
       16},
  };
  return presets;
}

bool is_bert_arch(const std::string& arch) {
  for (const BertPreset& p : bert_presets()) {
    if (p.name == arch) return true;
  }
  return false;
}

void validate_bert_config(const BertConfig& c) {
  const auto fail = [&](const std::string& what) {
    throw InputError(fmt::format("{}: {}", c.name, what));
  };
  if (c.num_layers < 1 || c.hidden < 1 || c.num_heads < 1 || c.intermediate < 1 ||
      c.type_vocab_size < 1) {
    fail(
        fmt::format("layers = {}, hidden = {}, heads = {}, intermediate = {}, type vocabulary = "
                    "{}: every size must be >= 1",
                    c.num_layers, c.hidden, c.num_heads, c.intermediate, c.type_vocab_size));
  }
  if (c.hidden % c.num_heads != 0) {
    fail(fmt::format("hidden size {} is not divisible by {} attention heads", c.hidden,
                     c.num_heads));
  }
  if (c.vocab_size < 1) {
    fail(fmt::format("model.vocab_size = {}: the vocabulary needs at least 1 token", c.vocab_size));
  }
  if (c.max_seq_len < 1) {
    fail(fmt::format("model.max_seq_len = {}: must be >= 1 (rows of the position embedding)",
                     c.max_seq_len));
  }
  if (!(c.dropout >= 0.0 && c.dropout < 1.0) ||
      !(c.attention_dropout >= 0.0 && c.attention_dropout < 1.0)) {
    fail(fmt::format("model.dropout = {} (attention {}): must be in [0, 1)", c.dropout,
                     c.attention_dropout));
  }
  if (!(c.layer_norm_eps > 0.0)) {
    fail(fmt::format("LayerNorm eps = {}: must be > 0", c.layer_norm_eps));
  }
}

BertConfig bert_config_from(const config::ModelConfig& model, int64_t vocab_size) {
  const BertPreset* preset = nullptr;
  for (const BertPreset& p : bert_presets()) {
    if (p.name == model.arch) preset = &p;
  }
  if (preset == nullptr) {
    std::vector<std::string> names;
    for (const BertPreset& p : bert_presets()) names.push_back(p.name);
    throw InputError(fmt::format("model.arch = \"{}\": not a BERT architecture; valid: {}",
                                 model.arch, fmt::join(names, ", ")));
  }
  BertConfig c;
  c.name = preset->name;
  c.num_layers = preset->num_layers;
  c.hidden = preset->hidden;
  c.num_heads = preset->num_heads;
  c.intermediate = 4 * preset->hidden;
  c.vocab_size = vocab_size > 0 ? vocab_size : model.vocab_size;
  c.max_seq_len = model.max_seq_len;
  c.dropout = model.dropout;
  c.attention_dropout = model.dropout;
  c.norm_first = model.norm_first;
  c.next_sentence = model.next_sentence;
  validate_bert_config(c);
  return c;
}

int64_t default_mlm_positions(int64_t seq_len) {
  return std::llround(kBertMlmFraction * static_cast<double>(seq_len));
}

int64_t bert_forward_macs(const BertConfig& c, int64_t seq_len, int64_t mlm_positions) {
  validate_bert_config(c);
  if (seq_len < 1 || seq_len > c.max_seq_len) {
    throw InputError(fmt::format("{}: sequence length {} must be in [1, model.max_seq_len = {}]",
                                 c.name, seq_len, c.max_seq_len));
  }
  if (mlm_positions < 0 || mlm_positions > seq_len) {
    throw InputError(fmt::format("{}: {} MLM positions in a sequence of {} tokens", c.name,
                                 mlm_positions, seq_len));
  }
  const int64_t T = seq_len, H = c.hidden, I = c.intermediate;
  const int64_t per_layer = 4 * T * H * H     // query, key, value and output projections
                            + 2 * T * T * H   // scores (all heads: T x T x head_dim each) + P V
                            + 2 * T * H * I;  // FFN up and down
  int64_t macs = c.num_layers * per_layer;
  if (c.next_sentence) macs += H * H + 2 * H;          // pooler + NSP classifier
  macs += mlm_positions * (H * H + H * c.vocab_size);  // transform + tied decoder
  return macs;
}

}  // namespace batchlab::models
