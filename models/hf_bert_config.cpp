#include "models/hf_bert_config.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "models/hf_config_check.h"

namespace batchlab::models {
namespace {

std::vector<HfShapeKey> hf_shape_keys(const BertConfig& c) {
  const std::string arch = fmt::format("model.arch = \"{}\"", c.name);
  return {
      {"hidden_size", static_cast<double>(c.hidden), arch},
      {"num_hidden_layers", static_cast<double>(c.num_layers), arch},
      {"num_attention_heads", static_cast<double>(c.num_heads), arch},
      {"intermediate_size", static_cast<double>(c.intermediate), arch},
      {"vocab_size", static_cast<double>(c.vocab_size), "the tokenizer's vocabulary"},
      {"max_position_embeddings", static_cast<double>(c.max_seq_len), "model.max_seq_len"},
      {"type_vocab_size", static_cast<double>(c.type_vocab_size), "fixed in batchlab's BERT"},
      {"layer_norm_eps", c.layer_norm_eps, "fixed in batchlab's BERT", /*as_float32=*/true},
  };
}

// What batchlab's BERT computes, for the keys that are words rather than sizes.
std::vector<HfFixedKey> hf_fixed_keys() {
  return {{"model_type", "bert"}, {"hidden_act", "gelu"}, {"position_embedding_type", "absolute"}};
}

}  // namespace

std::string hf_bert_config_json(const BertConfig& config) {
  nlohmann::ordered_json j;
  j["architectures"] = {config.next_sentence ? "BertForPreTraining" : "BertForMaskedLM"};
  j["model_type"] = "bert";
  for (const auto& s : hf_shape_keys(config)) {
    if (s.as_float32) {
      j[s.key] = s.value;
    } else {
      j[s.key] = static_cast<int64_t>(s.value);
    }
  }
  j["hidden_act"] = "gelu";
  j["hidden_dropout_prob"] = config.dropout;
  j["attention_probs_dropout_prob"] = config.attention_dropout;
  j["position_embedding_type"] = "absolute";
  j["initializer_range"] = 0.02;
  j["pad_token_id"] = 0;  // batchlab's [PAD] (experiments/data/tokenizer.h)
  j["tie_word_embeddings"] = true;
  j["dtype"] = "float32";
  return j.dump(2) + "\n";
}

std::vector<std::string> hf_bert_config_differences(const std::string& path,
                                                    const BertConfig& config) {
  return hf_config_differences(read_hf_config(path), hf_fixed_keys(), hf_shape_keys(config),
                               "batchlab's BERT");
}

}  // namespace batchlab::models
