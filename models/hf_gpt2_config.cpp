#include "models/hf_gpt2_config.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "models/bounded_json.h"
#include "models/hf_config_check.h"

namespace batchlab::models {
namespace {

constexpr double kGpt2InitializerRange = 0.02;  // models/gpt2.cpp's kGpt2InitStd

std::vector<HfShapeKey> gpt2_shape_keys(const Gpt2Config& c) {
  const std::string arch = fmt::format("model.arch = \"{}\"", c.name);
  return {
      {"n_embd", static_cast<double>(c.hidden), arch},
      {"n_layer", static_cast<double>(c.num_layers), arch},
      {"n_head", static_cast<double>(c.num_heads), arch},
      {"vocab_size", static_cast<double>(c.vocab_size), "the tokenizer's vocabulary"},
      {"n_positions", static_cast<double>(c.max_positions), "model.max_seq_len"},
      {"layer_norm_epsilon", c.layer_norm_eps, "fixed in batchlab's GPT-2", /*as_float32=*/true},
  };
}

// What batchlab's GPT-2 computes; transformers' defaults are these values.
std::vector<HfFixedKey> gpt2_fixed_keys() {
  return {{"model_type", "gpt2"},         {"activation_function", "gelu_new"},
          {"scale_attn_weights", true},   {"scale_attn_by_inverse_layer_idx", false},
          {"add_cross_attention", false}, {"tie_word_embeddings", true}};
}

}  // namespace

std::string hf_gpt2_config_json(const Gpt2Config& config, const Gpt2SpecialTokens& tokens) {
  nlohmann::ordered_json j;
  j["architectures"] = {"GPT2LMHeadModel"};
  j["model_type"] = "gpt2";
  for (const auto& s : gpt2_shape_keys(config)) {
    if (s.as_float32) {
      j[s.key] = s.value;
    } else {
      j[s.key] = static_cast<int64_t>(s.value);
    }
  }
  j["n_inner"] = nullptr;  // 4 x n_embd
  j["activation_function"] = "gelu_new";
  j["resid_pdrop"] = config.dropout;
  j["embd_pdrop"] = config.dropout;
  j["attn_pdrop"] = config.dropout;
  j["initializer_range"] = kGpt2InitializerRange;
  j["scale_attn_weights"] = true;
  j["scale_attn_by_inverse_layer_idx"] = false;
  j["reorder_and_upcast_attn"] = false;
  j["add_cross_attention"] = false;
  j["bos_token_id"] = tokens.bos;
  j["eos_token_id"] = tokens.eos;
  j["pad_token_id"] = tokens.pad;
  j["tie_word_embeddings"] = true;
  j["use_cache"] = true;
  j["dtype"] = "float32";
  return j.dump(2) + "\n";
}

std::vector<std::string> hf_gpt2_config_differences(const std::string& path,
                                                    const Gpt2Config& config) {
  const nlohmann::json j = read_hf_config(path);
  std::vector<std::string> out =
      hf_config_differences(j, gpt2_fixed_keys(), gpt2_shape_keys(config), "batchlab's GPT-2");
  // n_inner: null (or absent) means 4 x n_embd, which is what batchlab builds; a number must say
  // the same.
  if (j.contains("n_inner") && !j["n_inner"].is_null() &&
      !(j["n_inner"].is_number() && j["n_inner"].get<double>() == config.inner())) {
    out.push_back(
        fmt::format("n_inner: config.json {}, batchlab's GPT-2 computes only null "
                    "(4 x n_embd = {})",
                    json_excerpt(j["n_inner"]), config.inner()));
  }
  return out;
}

}  // namespace batchlab::models
