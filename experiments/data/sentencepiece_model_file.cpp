#include "experiments/data/sentencepiece_model_file.h"

#include <fmt/format.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>

#include "core/errors.h"

namespace batchlab::data {
namespace {

// Field numbers of sentencepiece_model.proto.
constexpr uint32_t kModelPieces = 1, kModelTrainerSpec = 2, kModelNormalizerSpec = 3;
constexpr uint32_t kPieceText = 1, kPieceScore = 2, kPieceType = 3;
constexpr uint32_t kTrainerModelType = 3, kTrainerByteFallback = 35;
constexpr uint32_t kNormalizerName = 1, kNormalizerCharsmap = 2, kNormalizerDummyPrefix = 3,
                   kNormalizerRemoveSpaces = 4, kNormalizerEscapeSpaces = 5;

// Protobuf wire types.
constexpr uint32_t kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5;

// A cursor over one message's bytes; each read checks that the bytes are there.
class WireReader {
 public:
  WireReader(std::string_view bytes, const std::string& path) : bytes_(bytes), path_(path) {}

  bool done() const { return pos_ == bytes_.size(); }

  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const auto byte = static_cast<uint8_t>(take(1)[0]);
      v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return v;
    }
    fail("a varint longer than 10 bytes");
  }

  std::string_view take(uint64_t n) {
    if (n > bytes_.size() - pos_) fail(fmt::format("a field runs past its message ({} bytes)", n));
    const auto out = bytes_.substr(pos_, n);
    pos_ += n;
    return out;
  }

  float fixed32_float() {
    const auto b = take(4);
    uint32_t bits = 0;
    for (int i = 3; i >= 0; --i) bits = (bits << 8) | static_cast<uint8_t>(b[i]);
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }

  // Skips a field's value of wire type `wire`.
  void skip(uint32_t wire) {
    switch (wire) {
      case kVarint:
        varint();
        return;
      case kFixed64:
        take(8);
        return;
      case kBytes:
        take(varint());
        return;
      case kFixed32:
        take(4);
        return;
      default:
        fail(fmt::format("wire type {}, which protobuf does not have", wire));
    }
  }

  [[noreturn]] void fail(const std::string& why) const {
    throw DataError(fmt::format("{}: not a SentencePiece model: {} at byte {}", path_, why, pos_));
  }

 private:
  std::string_view bytes_;
  const std::string& path_;
  size_t pos_ = 0;
};

// Calls on_field(number, wire, reader) for each field of the message; on_field consumes the value
// of the fields it wants and returns false for the others, which are skipped.
template <typename F>
void each_field(WireReader& r, F&& on_field) {
  while (!r.done()) {
    const uint64_t key = r.varint();
    const auto number = static_cast<uint32_t>(key >> 3);
    const auto wire = static_cast<uint32_t>(key & 7);
    if (!on_field(number, wire, r)) r.skip(wire);
  }
}

SentencePieceModelFile::Piece piece_of(std::string_view bytes, const std::string& path) {
  SentencePieceModelFile::Piece p;
  WireReader r(bytes, path);
  each_field(r, [&](uint32_t number, uint32_t wire, WireReader& in) {
    if (number == kPieceText && wire == kBytes) {
      p.piece = std::string(in.take(in.varint()));
    } else if (number == kPieceScore && wire == kFixed32) {
      p.score = in.fixed32_float();
    } else if (number == kPieceType && wire == kVarint) {
      p.type = static_cast<SentencePieceModelFile::PieceType>(in.varint());
    } else {
      return false;
    }
    return true;
  });
  return p;
}

void read_trainer_spec(std::string_view bytes, const std::string& path,
                       SentencePieceModelFile& out) {
  WireReader r(bytes, path);
  each_field(r, [&](uint32_t number, uint32_t wire, WireReader& in) {
    if (number == kTrainerModelType && wire == kVarint) {
      static const char* const kTypes[] = {"", "unigram", "bpe", "word", "char"};
      const uint64_t t = in.varint();
      out.model_type = t >= 1 && t <= 4 ? kTypes[t] : fmt::format("type {}", t);
    } else if (number == kTrainerByteFallback && wire == kVarint) {
      out.byte_fallback = in.varint() != 0;
    } else {
      return false;
    }
    return true;
  });
}

void read_normalizer_spec(std::string_view bytes, const std::string& path,
                          SentencePieceModelFile& out) {
  WireReader r(bytes, path);
  each_field(r, [&](uint32_t number, uint32_t wire, WireReader& in) {
    if (number == kNormalizerName && wire == kBytes) {
      out.normalizer_name = std::string(in.take(in.varint()));
    } else if (number == kNormalizerCharsmap && wire == kBytes) {
      out.precompiled_charsmap = std::string(in.take(in.varint()));
    } else if (number == kNormalizerDummyPrefix && wire == kVarint) {
      out.add_dummy_prefix = in.varint() != 0;
    } else if (number == kNormalizerRemoveSpaces && wire == kVarint) {
      out.remove_extra_whitespaces = in.varint() != 0;
    } else if (number == kNormalizerEscapeSpaces && wire == kVarint) {
      out.escape_whitespaces = in.varint() != 0;
    } else {
      return false;
    }
    return true;
  });
}

}  // namespace

SentencePieceModelFile read_sentencepiece_model_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(fmt::format("{}: cannot be read: {}", path, std::strerror(errno)));
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string bytes = buffer.str();
  SentencePieceModelFile out;
  WireReader r(bytes, path);
  each_field(r, [&](uint32_t number, uint32_t wire, WireReader& msg) {
    if (wire != kBytes) return false;
    if (number == kModelPieces) {
      out.pieces.push_back(piece_of(msg.take(msg.varint()), path));
    } else if (number == kModelTrainerSpec) {
      read_trainer_spec(msg.take(msg.varint()), path, out);
    } else if (number == kModelNormalizerSpec) {
      read_normalizer_spec(msg.take(msg.varint()), path, out);
    } else {
      return false;
    }
    return true;
  });
  if (out.pieces.empty()) r.fail("no pieces");
  return out;
}

}  // namespace batchlab::data
