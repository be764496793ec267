#include "models/gpt2_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/errors.h"

namespace batchlab::models {

const std::vector<Gpt2Preset>& gpt2_presets() {
  static const std::vector<Gpt2Preset> presets = {
      {"gpt2_tiny", "GPT-2-family decoder, 2 layers, hidden 128, 2 heads (trains on a 2-core CPU)",
       2, 128, 2, 128},
      {"gpt2_mini", "GPT-2-family decoder, 4 layers, hidden 256, 4 heads", 4, 256, 4, 128},
      {"gpt2_small", "GPT-2 small, 12 layers, hidden 768, 12 heads (Radford et al. 2019, 124M)", 12,
       768, 12, 1024},
      {"gpt2_medium", "GPT-2 medium, 24 layers, hidden 1024, 16 heads (Radford et al. 2019)", 24,
       1024, 16, 1024},
      {"gpt2_large", "GPT-2 large, 36 layers, hidden 1280, 20 heads (Radford et al. 2019)", 36,
       1280, 20, 1024},
      {"gpt2_xl", "GPT-2 XL, 48 layers, hidden 1600, 25 heads (Radford et al. 2019, 1.5B)", 48,
       1600, 25, 1024},
  };
  return presets;
}

bool is_gpt2_arch(const std::string& arch) {
  for (const Gpt2Preset& p : gpt2_presets()) {
    if (p.name == arch) return true;
  }
  return false;
}

void validate_gpt2_config(const Gpt2Config& c) {
  const auto fail = [&](const std::string& what) {
    throw InputError(fmt::format("{}: {}", c.name, what));
  };
  if (c.num_layers < 1 || c.hidden < 1 || c.num_heads < 1) {
    fail(fmt::format("layers = {}, hidden = {}, heads = {}: every size must be >= 1", c.num_layers,
                     c.hidden, c.num_heads));
  }
  if (c.hidden % c.num_heads != 0) {
    fail(fmt::format("hidden size {} is not divisible by {} attention heads", c.hidden,
                     c.num_heads));
  }
  if (c.vocab_size < 1) {
    fail(fmt::format("model.vocab_size = {}: the vocabulary needs at least 1 token", c.vocab_size));
  }
  if (c.max_positions < 1) {
    fail(fmt::format("model.max_seq_len = {}: must be >= 1 (rows of the position embedding)",
                     c.max_positions));
  }
  if (!(c.dropout >= 0.0 && c.dropout < 1.0)) {
    fail(fmt::format("model.dropout = {}: must be in [0, 1)", c.dropout));
  }
  if (!(c.layer_norm_eps > 0.0)) {
    fail(fmt::format("LayerNorm eps = {}: must be > 0", c.layer_norm_eps));
  }
}

Gpt2Config gpt2_config_from(const config::ModelConfig& model, int64_t vocab_size) {
  const Gpt2Preset* preset = nullptr;
  for (const Gpt2Preset& p : gpt2_presets()) {
    if (p.name == model.arch) preset = &p;
  }
  if (preset == nullptr) {
    std::vector<std::string> names;
    for (const Gpt2Preset& p : gpt2_presets()) names.push_back(p.name);
    throw InputError(fmt::format("model.arch = \"{}\": not a GPT-2 architecture; valid: {}",
                                 model.arch, fmt::join(names, ", ")));
  }
  Gpt2Config c;
  c.name = preset->name;
  c.num_layers = preset->num_layers;
  c.hidden = preset->hidden;
  c.num_heads = preset->num_heads;
  c.vocab_size = vocab_size > 0 ? vocab_size : model.vocab_size;
  c.max_positions = model.max_seq_len;
  c.dropout = model.dropout;
  validate_gpt2_config(c);
  return c;
}

int64_t gpt2_parameters(const Gpt2Config& c) {
  const int64_t h = c.hidden;
  const int64_t inner = c.inner();
  int64_t n = (c.vocab_size + c.max_positions) * h;  // wte (also the output layer) and wpe
  // Per layer: ln_1; c_attn and c_proj; ln_2; c_fc and the MLP's c_proj.
  n += c.num_layers *
       (2 * h + (h * 3 * h + 3 * h) + (h * h + h) + 2 * h + (h * inner + inner) + (inner * h + h));
  n += 2 * h;  // ln_f
  return n;
}

int64_t gpt2_forward_macs(const Gpt2Config& c, int64_t seq_len) {
  validate_gpt2_config(c);
  if (seq_len < 1 || seq_len > c.max_positions) {
    throw InputError(fmt::format("{}: sequence length {} must be in [1, model.max_seq_len = {}]",
                                 c.name, seq_len, c.max_positions));
  }
  const int64_t T = seq_len, H = c.hidden, I = c.inner();
  const int64_t per_layer = 4 * T * H * H     // c_attn (query, key, value) and c_proj
                            + 2 * T * T * H   // scores (all heads: T x T x head_dim each) + P V
                            + 2 * T * H * I;  // MLP up and down
  return c.num_layers * per_layer + T * H * c.vocab_size;  // + the tied LM head at every position
}

}  // namespace batchlab::models
