#include "experiments/data/hf_tokenizer_files.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "experiments/data/tokenizer.h"

namespace batchlab::data {
namespace {

using Json = nlohmann::ordered_json;
using PieceType = SentencePieceModelFile::PieceType;

constexpr const char* kMetaspace = "\xe2\x96\x81";  // U+2581, SentencePiece's escaped space

// tokenizers stores the compiled character map as base64.
std::string base64(const std::string& bytes) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = (static_cast<uint8_t>(bytes[i]) << 16) |
                       (static_cast<uint8_t>(bytes[i + 1]) << 8) |
                       static_cast<uint8_t>(bytes[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out.push_back(kAlphabet[(v >> s) & 63]);
  }
  if (i < bytes.size()) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

// batchlab's reserved ids (tokenizer.h), as tokenizers' added special tokens: matched before the
// model runs, never split, skipped by decode(skip_special_tokens=True).
Json added_tokens(const SentencePieceModelFile& model) {
  Json out = Json::array();
  for (int32_t id = 0; id < kFirstOrdinaryId; ++id) {
    out.push_back({{"id", id},
                   {"content", model.pieces[static_cast<size_t>(id)].piece},
                   {"single_word", false},
                   {"lstrip", false},
                   {"rstrip", false},
                   {"normalized", false},
                   {"special", true}});
  }
  return out;
}

Json normalizer(const SentencePieceModelFile& model) {
  Json steps = Json::array();
  if (!model.precompiled_charsmap.empty()) {
    steps.push_back(
        {{"type", "Precompiled"}, {"precompiled_charsmap", base64(model.precompiled_charsmap)}});
  }
  if (model.remove_extra_whitespaces) {
    // SentencePiece drops leading and trailing spaces and keeps one of each run.
    steps.push_back({{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}});
    steps.push_back({{"type", "Replace"}, {"pattern", {{"Regex", " {2,}"}}}, {"content", " "}});
  }
  return {{"type", "Sequence"}, {"normalizers", steps}};
}

Json pre_tokenizer(const SentencePieceModelFile& model) {
  // Splitting at the escaped spaces changes nothing: the trainer keeps U+2581 at the start of a
  // piece only (split_by_whitespace), so no piece spans two words.
  return {{"type", "Metaspace"},
          {"replacement", kMetaspace},
          {"prepend_scheme", model.add_dummy_prefix ? "always" : "never"},
          {"split", true}};
}

Json special(const char* token, int32_t id) {
  return {{"id", token}, {"ids", {id}}, {"tokens", {token}}};
}

Json post_processor() {
  const auto tok = [](const char* id, int type) {
    return Json{{"SpecialToken", {{"id", id}, {"type_id", type}}}};
  };
  const auto seq = [](const char* id, int type) {
    return Json{{"Sequence", {{"id", id}, {"type_id", type}}}};
  };
  return {{"type", "TemplateProcessing"},
          {"single", {tok("[CLS]", 0), seq("A", 0), tok("[SEP]", 0)}},
          {"pair", {tok("[CLS]", 0), seq("A", 0), tok("[SEP]", 0), seq("B", 1), tok("[SEP]", 1)}},
          {"special_tokens",
           {{"[CLS]", special("[CLS]", kClsId)}, {"[SEP]", special("[SEP]", kSepId)}}}};
}

Json decoder() {
  return {{"type", "Sequence"},
          {"decoders",
           {{{"type", "Replace"}, {"pattern", {{"String", kMetaspace}}}, {"content", " "}},
            {{"type", "ByteFallback"}},
            {{"type", "Fuse"}},
            {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};
}

Json unigram(const SentencePieceModelFile& model) {
  Json vocab = Json::array();
  for (const auto& p : model.pieces) vocab.push_back({p.piece, p.score});
  return {{"type", "Unigram"},
          {"unk_id", kUnkId},
          {"vocab", vocab},
          {"byte_fallback", model.byte_fallback}};
}

void check_reproducible(const SentencePieceModelFile& model, const std::string& source) {
  if (model.model_type != "unigram") {
    throw InputError(fmt::format(
        "{}: a SentencePiece {} model; the Hugging Face export reproduces unigram models only "
        "(SentencePiece's BPE ranks merges by piece score, which a tokenizers BPE model does not "
        "take): train the tokenizer with model_type unigram, batchlab's default",
        source, model.model_type));
  }
  if (!model.escape_whitespaces) {
    throw InputError(fmt::format(
        "{}: a SentencePiece model that does not escape whitespace, which tokenizers' Metaspace "
        "cannot reproduce",
        source));
  }
  for (int32_t id = 0; id < kFirstOrdinaryId; ++id) {
    if (static_cast<size_t>(id) >= model.pieces.size() ||
        (model.pieces[static_cast<size_t>(id)].type != PieceType::control &&
         model.pieces[static_cast<size_t>(id)].type != PieceType::unknown)) {
      throw InputError(fmt::format(
          "{}: id {} is not one of batchlab's reserved tokens ([PAD] [UNK] [CLS] [SEP] [MASK] = "
          "0..4): retrain with `batchlab data tokenizer`",
          source, id));
    }
  }
}

}  // namespace

HfTokenizerFiles hf_tokenizer_files(const SentencePieceModelFile& model, const std::string& source,
                                    int64_t max_length) {
  check_reproducible(model, source);
  Json tokenizer;
  tokenizer["version"] = "1.0";
  tokenizer["truncation"] = nullptr;
  tokenizer["padding"] = nullptr;
  tokenizer["added_tokens"] = added_tokens(model);
  tokenizer["normalizer"] = normalizer(model);
  tokenizer["pre_tokenizer"] = pre_tokenizer(model);
  tokenizer["post_processor"] = post_processor();
  tokenizer["decoder"] = decoder();
  tokenizer["model"] = unigram(model);

  Json specials = {{"pad_token", "[PAD]"},
                   {"unk_token", "[UNK]"},
                   {"cls_token", "[CLS]"},
                   {"sep_token", "[SEP]"},
                   {"mask_token", "[MASK]"}};
  Json config = specials;
  config["tokenizer_class"] = "PreTrainedTokenizerFast";
  config["model_max_length"] = max_length;
  config["padding_side"] = "right";
  config["model_input_names"] = {"input_ids", "token_type_ids", "attention_mask"};
  config["clean_up_tokenization_spaces"] = false;

  HfTokenizerFiles out;
  out.tokenizer_json = tokenizer.dump(2, ' ', /*ensure_ascii=*/false) + "\n";
  out.tokenizer_config_json = config.dump(2) + "\n";
  out.special_tokens_map_json = specials.dump(2) + "\n";
  return out;
}

}  // namespace batchlab::data
