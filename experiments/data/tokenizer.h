// SentencePiece tokenizer for BERT pretraining (Debian's libsentencepiece): training on raw text
// files with a chosen vocabulary size, loading, encoding.
//
// Every tokenizer trained here reserves the same five ids, so batch building and models never
// look them up: [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, [MASK] 4. [CLS], [SEP] and [MASK] are
// SentencePiece *control* symbols: encoding text never produces them, even when the text contains
// the literal string "[MASK]", so a corpus cannot forge a special token. Byte fallback is on, so
// characters outside the learned pieces become byte pieces instead of [UNK].
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace batchlab::data {

class SentencePieceBackend;

inline constexpr int32_t kPadId = 0;
inline constexpr int32_t kUnkId = 1;
inline constexpr int32_t kClsId = 2;
inline constexpr int32_t kSepId = 3;
inline constexpr int32_t kMaskId = 4;
// Ids below this are reserved (the five above); ordinary pieces start here.
inline constexpr int32_t kFirstOrdinaryId = 5;

struct TokenizerTrainOptions {
  int64_t vocab_size = 8000;
  std::string model_type = "unigram";  // unigram | bpe (SentencePiece's algorithms)
  double character_coverage =
      0.9995;  // characters covered by pieces; the rarest fall back to bytes
  // Lines sampled (deterministically, from `seed`) for training when the corpus has more: the
  // trainer's memory and time grow with it, and a few hundred thousand lines suffice for 8-32k
  // pieces.
  int64_t max_sentences = 1000000;
  // Trainer threads. Fixed by default rather than the machine's core count, so the same corpus
  // gives the same pieces on every machine.
  int64_t threads = 2;
  uint32_t seed = 0;
};

// Trains on the non-empty lines of `files` (one sentence per line; lines over 4192 bytes are
// skipped by SentencePiece) and writes MODEL_PREFIX.model and MODEL_PREFIX.vocab. Throws
// InputError naming the file for an unreadable input or a vocabulary size the corpus cannot fill
// (SentencePiece's message says the largest it can), or naming the value for bad options.
void train_tokenizer(const std::vector<std::string>& files, const std::string& model_prefix,
                     const TokenizerTrainOptions& options);

class Tokenizer {
 public:
  // Loads a .model file. Throws DataError naming the file when it is missing or not a
  // SentencePiece model, or when its special tokens do not have the fixed ids above (a model not
  // trained by batchlab: retrain it with `batchlab data tokenizer`).
  static Tokenizer load(const std::string& model_path);

  // Token ids of `text`, without [CLS]/[SEP]. Thread-safe (SentencePiece encoding is const).
  std::vector<int32_t> encode(std::string_view text) const;
  std::string decode(const std::vector<int32_t>& ids) const;
  std::string piece(int32_t id) const;

  int64_t vocab_size() const;
  const std::string& path() const { return path_; }

 private:
  Tokenizer() = default;
  std::shared_ptr<SentencePieceBackend> sp_;
  std::string path_;
};

}  // namespace batchlab::data
