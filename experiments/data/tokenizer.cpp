#include "experiments/data/tokenizer.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include "core/errors.h"
#include "experiments/data/sentencepiece_backend.h"

namespace batchlab::data {
namespace {

struct Reserved {
  int32_t id;
  const char* piece;
};
constexpr Reserved kReserved[] = {{kPadId, "[PAD]"},
                                  {kUnkId, "[UNK]"},
                                  {kClsId, "[CLS]"},
                                  {kSepId, "[SEP]"},
                                  {kMaskId, "[MASK]"}};

// SentencePiece's random generator seed is a process-wide setting: trainings are serialized so
// the seed set for one is the seed it uses.
std::mutex& training_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

void train_tokenizer(const std::vector<std::string>& files, const std::string& model_prefix,
                     const TokenizerTrainOptions& options) {
  if (files.empty()) throw InputError("tokenizer training: no input files");
  for (const auto& f : files) {
    std::ifstream probe(f, std::ios::binary);
    if (!probe) throw DataError(fmt::format("{}: cannot open for reading", f));
  }
  if (options.vocab_size <= kFirstOrdinaryId) {
    throw InputError(fmt::format("vocabulary size = {}: must be larger than the {} reserved ids",
                                 options.vocab_size, kFirstOrdinaryId));
  }
  if (options.model_type != "unigram" && options.model_type != "bpe") {
    throw InputError(
        fmt::format("tokenizer model type = {}: must be unigram or bpe", options.model_type));
  }
  if (options.max_sentences <= 0 || options.threads <= 0) {
    throw InputError(
        fmt::format("tokenizer training: max sentences ({}) and threads ({}) must be "
                    "positive",
                    options.max_sentences, options.threads));
  }
  const auto parent = std::filesystem::path(model_prefix).parent_path();
  if (!parent.empty() && !std::filesystem::is_directory(parent)) {
    throw InputError(fmt::format("{}: output directory does not exist", parent.string()));
  }

  const std::map<std::string, std::string> args = {
      {"model_prefix", model_prefix},
      {"vocab_size", std::to_string(options.vocab_size)},
      {"model_type", options.model_type},
      {"character_coverage", fmt::format("{}", options.character_coverage)},
      {"input_sentence_size", std::to_string(options.max_sentences)},
      {"shuffle_input_sentence", "true"},
      {"num_threads", std::to_string(options.threads)},
      {"pad_id", "0"},
      {"pad_piece", "[PAD]"},
      {"unk_id", "1"},
      {"unk_piece", "[UNK]"},
      {"bos_id", "-1"},
      {"eos_id", "-1"},
      // Control symbols take the lowest free ids in this order: 2, 3, 4.
      {"control_symbols", "[CLS],[SEP],[MASK]"},
      {"byte_fallback", "true"},
      {"minloglevel", "2"},  // errors only: the trainer's progress log is thousands of lines
  };
  std::lock_guard<std::mutex> lock(training_mutex());
  const auto error = make_sentencepiece_backend()->train(args, files, options.seed);
  if (!error.empty()) {
    // Most often "Vocabulary size too high (N). Please set it to a value <= M.": a corpus too small
    // for the vocabulary asked for.
    throw InputError(fmt::format("tokenizer training on {} file(s) ({}{}) failed: {}", files.size(),
                                 files.front(), files.size() > 1 ? ", ..." : "", error));
  }
}

Tokenizer Tokenizer::load(const std::string& model_path) {
  if (!std::filesystem::is_regular_file(model_path)) {
    throw DataError(
        fmt::format("{}: tokenizer model not found (train one with `batchlab data "
                    "tokenizer`)",
                    model_path));
  }
  Tokenizer t;
  t.path_ = model_path;
  t.sp_ = make_sentencepiece_backend();
  if (const auto error = t.sp_->load(model_path); !error.empty()) {
    throw DataError(fmt::format("{}: not a SentencePiece model: {}", model_path, error));
  }
  for (const auto& r : kReserved) {
    // By id, not PieceToId: an absent piece maps to the unknown id, which may be the id asked for.
    const auto actual = r.id < t.sp_->piece_size() ? t.sp_->id_to_piece(r.id) : std::string("none");
    if (actual != r.piece) {
      throw DataError(
          fmt::format("{}: id {} is {}, expected {}; batchlab needs its own reserved ids "
                      "([PAD] [UNK] [CLS] [SEP] [MASK] = 0..4): retrain with `batchlab "
                      "data tokenizer`",
                      model_path, r.id, actual, r.piece));
    }
  }
  return t;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
  static_assert(sizeof(int) == sizeof(int32_t));
  std::vector<int> ids;
  if (const auto error = sp_->encode(text, &ids); !error.empty()) {
    throw DataError(fmt::format("{}: encoding failed: {}", path_, error));
  }
  return std::vector<int32_t>(ids.begin(), ids.end());
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string text;
  if (const auto error = sp_->decode(std::vector<int>(ids.begin(), ids.end()), &text);
      !error.empty()) {
    throw DataError(fmt::format("{}: decoding failed: {}", path_, error));
  }
  return text;
}

std::string Tokenizer::piece(int32_t id) const {
  if (id < 0 || id >= sp_->piece_size()) {
    throw InputError(
        fmt::format("token id {} outside the vocabulary [0, {})", id, sp_->piece_size()));
  }
  return sp_->id_to_piece(id);
}

int64_t Tokenizer::vocab_size() const { return sp_->piece_size(); }

}  // namespace batchlab::data
