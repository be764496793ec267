// What a SentencePiece .model file holds, read straight from its bytes: the pieces with their
// scores and kinds, the trainer's algorithm and byte fallback, and the normalizer (its compiled
// character map and whitespace rules). `batchlab export --format hf` turns these into a
// tokenizer.json that Hugging Face's tokenizers library encodes with exactly as SentencePiece does
// (experiments/data/hf_tokenizer_files.h).
//
// The file is a serialized protobuf (sentencepiece_model.proto's ModelProto). Debian's
// libsentencepiece-dev ships no header for it, and SentencePiece's processor API exposes neither
// the scores' kinds nor the normalizer's character map, so the few fields needed are read here
// from the protobuf wire format (varints, length-delimited fields, 32-bit floats); every other
// field is skipped by its wire type.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace batchlab::data {

struct SentencePieceModelFile {
  // sentencepiece_model.proto's SentencePiece.Type.
  enum class PieceType : int32_t {
    normal = 1,
    unknown = 2,
    control = 3,
    user_defined = 4,
    unused = 5,
    byte = 6
  };
  struct Piece {
    std::string piece;
    float score = 0;
    PieceType type = PieceType::normal;
  };
  std::vector<Piece> pieces;  // by id
  // TrainerSpec.
  std::string model_type = "unigram";  // unigram | bpe | word | char
  bool byte_fallback = false;
  // NormalizerSpec (proto defaults where the file leaves a field out).
  std::string normalizer_name;
  std::string precompiled_charsmap;  // raw bytes
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  bool escape_whitespaces = true;
};

// Parses the .model file at `path`. Throws DataError naming it when it cannot be read or its bytes
// are no well-formed ModelProto (a truncated field, a wire type protobuf does not have).
SentencePieceModelFile read_sentencepiece_model_file(const std::string& path);

}  // namespace batchlab::data
