// The SentencePiece .model reader (experiments/data/sentencepiece_model_file.h) on ModelProto bytes
// encoded here field by field: the pieces with score and kind, the trainer's algorithm and byte
// fallback, the normalizer, proto defaults for fields left out, unknown fields skipped by their
// wire type, and a DataError naming the file for bytes that are no well-formed ModelProto.
#include "experiments/data/sentencepiece_model_file.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "core/errors.h"
#include "tests/temp_dir.h"

namespace batchlab::data {
namespace {

// Protobuf wire format, as much of it as the messages below need.
std::string varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}
std::string key(uint32_t number, uint32_t wire) { return varint((number << 3) | wire); }
std::string bytes_field(uint32_t number, const std::string& value) {
  return key(number, 2) + varint(value.size()) + value;
}
std::string varint_field(uint32_t number, uint64_t value) { return key(number, 0) + varint(value); }
std::string float_field(uint32_t number, float value) {
  std::string raw(4, '\0');
  std::memcpy(raw.data(), &value, 4);  // little-endian on every machine batchlab builds for
  return key(number, 5) + raw;
}

// One ModelProto.pieces entry (field 1): SentencePiece {piece = 1, score = 2, type = 3}.
std::string piece(const std::string& text, float score, int type) {
  return bytes_field(1, bytes_field(1, text) + float_field(2, score) + varint_field(3, type));
}

std::string write(const test_support::TempDir& dir, const std::string& bytes) {
  const std::string path = dir.file("m.model");
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(SentencePieceModelFile, ReadsPiecesTrainerAndNormalizer) {
  const std::string trainer = varint_field(3, 2) + varint_field(35, 1) + key(9, 1) +
                              std::string(8, 'x');  // a fixed64 it skips
  const std::string charsmap("\x00\x01\xff", 3);
  const std::string normalizer = bytes_field(1, "nmt_nfkc") + bytes_field(2, charsmap) +
                                 varint_field(3, 0) + varint_field(4, 0) + varint_field(5, 1);
  const std::string model = piece("<unk>", 0.0f, 2) + piece("\xe2\x96\x81the", -3.5f, 1) +
                            piece("<0x41>", 0.0f, 6) + bytes_field(2, trainer) +
                            bytes_field(3, normalizer) + bytes_field(5, "self-test data");
  test_support::TempDir dir("spm");
  const auto m = read_sentencepiece_model_file(write(dir, model));
  ASSERT_EQ(m.pieces.size(), 3u);
  EXPECT_EQ(m.pieces[0].piece, "<unk>");
  EXPECT_EQ(m.pieces[0].type, SentencePieceModelFile::PieceType::unknown);
  EXPECT_EQ(m.pieces[1].piece, "\xe2\x96\x81the");
  EXPECT_FLOAT_EQ(m.pieces[1].score, -3.5f);
  EXPECT_EQ(m.pieces[1].type, SentencePieceModelFile::PieceType::normal);
  EXPECT_EQ(m.pieces[2].type, SentencePieceModelFile::PieceType::byte);
  EXPECT_EQ(m.model_type, "bpe");
  EXPECT_TRUE(m.byte_fallback);
  EXPECT_EQ(m.normalizer_name, "nmt_nfkc");
  EXPECT_EQ(m.precompiled_charsmap, charsmap);
  EXPECT_FALSE(m.add_dummy_prefix);
  EXPECT_FALSE(m.remove_extra_whitespaces);
  EXPECT_TRUE(m.escape_whitespaces);
}

TEST(SentencePieceModelFile, FieldsLeftOutTakeTheProtoDefaults) {
  test_support::TempDir dir("spm");
  const auto m = read_sentencepiece_model_file(write(dir, piece("a", -1.0f, 1)));
  ASSERT_EQ(m.pieces.size(), 1u);
  EXPECT_EQ(m.model_type, "unigram");
  EXPECT_FALSE(m.byte_fallback);
  EXPECT_TRUE(m.add_dummy_prefix);
  EXPECT_TRUE(m.remove_extra_whitespaces);
  EXPECT_TRUE(m.escape_whitespaces);
  EXPECT_EQ(m.normalizer_name, "");
}

void expect_refused(const std::string& bytes, const std::string& why) {
  test_support::TempDir dir("spm");
  const std::string path = write(dir, bytes);
  try {
    read_sentencepiece_model_file(path);
    ADD_FAILURE() << "accepted; expected: " << why;
  } catch (const DataError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(path + ": not a SentencePiece model: " + why), std::string::npos)
        << message;
  }
}

TEST(SentencePieceModelFile, BytesThatAreNoModelProtoAreADataErrorNamingTheFile) {
  const std::string good = piece("a", -1.0f, 1) + piece("b", -2.0f, 1);
  expect_refused(good.substr(0, good.size() - 3), "a field runs past its message");
  expect_refused(key(4, 3), "wire type 3, which protobuf does not have");
  expect_refused(bytes_field(2, varint_field(3, 1)), "no pieces");
  expect_refused("", "no pieces");
  test_support::TempDir dir("spm");
  EXPECT_THROW(read_sentencepiece_model_file(dir.file("absent.model")), DataError);
}

}  // namespace
}  // namespace batchlab::data
