#include "models/hf_bert_config.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/errors.h"
#include "models/bounded_json.h"

namespace batchlab::models {
namespace {

// save_pretrained's config.json is about a kilobyte; a megabyte leaves room for any real one.
constexpr uintmax_t kMaxConfigBytes = uintmax_t{1} << 20;

// One config.json key, the experiment's value, and which experiment key sets it.
struct HfShapeKey {
  const char* key;
  double value;
  std::string set_by;
};

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
      {"layer_norm_eps", c.layer_norm_eps, "fixed in batchlab's BERT"},
  };
}

std::string hf_number(double v) {
  return v == std::floor(v) && std::abs(v) < 1e15 ? fmt::format("{}", static_cast<int64_t>(v))
                                                  : fmt::format("{}", v);
}

// What batchlab's BERT computes, for the keys that are words rather than sizes; a key missing
// from config.json takes transformers' default, which is batchlab's.
struct HfFixedKey {
  const char* key;
  const char* value;
};
constexpr HfFixedKey kFixed[] = {
    {"model_type", "bert"}, {"hidden_act", "gelu"}, {"position_embedding_type", "absolute"}};

}  // namespace

std::string hf_bert_config_json(const BertConfig& config) {
  nlohmann::ordered_json j;
  j["architectures"] = {config.next_sentence ? "BertForPreTraining" : "BertForMaskedLM"};
  j["model_type"] = "bert";
  for (const auto& s : hf_shape_keys(config)) {
    if (std::string(s.key) == "layer_norm_eps") {
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
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("{}: cannot be read", path));
  // save_pretrained writes about a kilobyte; the bound keeps a huge file from being read whole.
  std::error_code ec;
  if (const auto size = std::filesystem::file_size(path, ec); !ec && size > kMaxConfigBytes) {
    throw InputError(fmt::format(
        "{}: {} bytes, more than the {} a config.json may have (save_pretrained writes about a "
        "kilobyte): not a Hugging Face config.json; give the folder save_pretrained wrote",
        path, size, kMaxConfigBytes));
  }
  std::stringstream text;
  text << in.rdbuf();
  // Depth and size are bounded before the parse (models/bounded_json.h).
  const auto parsed = parse_bounded_json(text.str(), path, "config.json");
  if (!parsed || !parsed->is_object()) {
    throw InputError(fmt::format(
        "{}: not a JSON object (a Hugging Face config.json, as save_pretrained writes it, is "
        "expected)",
        path));
  }
  const nlohmann::json& j = *parsed;
  std::vector<std::string> out;
  for (const auto& f : kFixed) {
    if (!j.contains(f.key)) continue;
    const auto& v = j[f.key];
    if (!v.is_string() || v.get<std::string>() != f.value) {
      out.push_back(fmt::format("{}: config.json {}, batchlab's BERT computes only {}", f.key,
                                json_excerpt(v), f.value));
    }
  }
  for (const auto& s : hf_shape_keys(config)) {
    if (!j.contains(s.key)) {
      out.push_back(fmt::format("{}: missing from config.json, the experiment {} ({})", s.key,
                                hf_number(s.value), s.set_by));
      continue;
    }
    const auto& v = j[s.key];
    // layer_norm_eps is compared as the float32 the LayerNorms hold: 1e-12 written by Python
    // and by batchlab may differ in their last printed digit.
    const bool same =
        v.is_number() && (std::string(s.key) == "layer_norm_eps"
                              ? static_cast<float>(v.get<double>()) == static_cast<float>(s.value)
                              : v.get<double>() == s.value);
    if (!same) {
      out.push_back(fmt::format("{}: config.json {}, the experiment {} ({})", s.key,
                                json_excerpt(v), hf_number(s.value), s.set_by));
    }
  }
  return out;
}

}  // namespace batchlab::models
