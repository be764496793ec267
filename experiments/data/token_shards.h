// Packed token shards: the output of `batchlab data pack-text`, read memory-mapped.
//
// A shard directory holds `index.txt` and shard files `shard-NNNNN.bin`. Each shard file is
//   64-byte header: magic "BLTOKSHD", uint32 format version, uint32 bytes per token (2 or 4),
//                   uint64 documents D, uint64 tokens T, 32 zero bytes
//   uint64 [D + 1]  token offset of each document in the shard (0 ... T): the document boundaries
//   tokens          uint16 [T] when the vocabulary fits (<= 65536 ids), else uint32 [T]
// all little-endian. A document never spans two shards. The index is a small text file:
//   batchlab-token-shards 1
//   vocab_size 8000
//   token_bytes 2
//   shard shard-00000.bin documents 497 tokens 3012345 bytes 6028762 crc32 8d2f10aa
// The index is written last, so an interrupted pack leaves a directory that fails to open rather
// than a silently short corpus. Opening checks every shard's size and CRC-32 against the index: a
// truncated or corrupt shard is a DataError naming the file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace batchlab::data {

inline constexpr const char* kShardIndexName = "index.txt";

struct TokenShardInfo {
  std::string file;  // name inside the directory
  int64_t documents = 0;
  int64_t tokens = 0;
  int64_t bytes = 0;
  uint32_t crc32 = 0;  // of the whole file
};

// Bytes per token for a vocabulary: 2 when every id fits in uint16, else 4.
int token_bytes_for_vocab(int64_t vocab_size);

class TokenShardWriter {
 public:
  // `dir` is created when missing and must hold no index already (InputError naming it).
  // A shard is closed once it holds at least `shard_bytes` of tokens.
  TokenShardWriter(std::string dir, int64_t vocab_size, int64_t shard_bytes);
  ~TokenShardWriter();
  TokenShardWriter(const TokenShardWriter&) = delete;
  TokenShardWriter& operator=(const TokenShardWriter&) = delete;

  // Appends one document; ids must lie in [0, vocab_size) (InputError otherwise).
  void add_document(const std::vector<int32_t>& tokens);
  // Writes the last shard and the index. Nothing is readable before this returns.
  void finish();

  const std::vector<TokenShardInfo>& shards() const { return shards_; }

 private:
  void flush_shard();

  std::string dir_;
  int64_t vocab_size_;
  int token_bytes_;
  int64_t shard_bytes_;
  std::vector<uint64_t> doc_offsets_;  // of the shard being filled: [0, ...]
  std::vector<uint8_t> tokens_;        // its tokens, already in the on-disk width
  std::vector<TokenShardInfo> shards_;
  bool finished_ = false;
};

class TokenShards {
 public:
  // Maps every shard of `dir` after checking it against the index. Throws DataError naming the
  // directory (no index: not a pack-text output, or no usable shard) or the shard file (missing,
  // truncated, bad header, checksum mismatch). With `skip_corrupt` (data.skip_corrupt) a bad
  // shard is left out instead and its message kept in skipped(): the corpus is the other shards.
  static std::shared_ptr<const TokenShards> open(const std::string& dir, bool skip_corrupt = false);
  ~TokenShards();
  TokenShards(const TokenShards&) = delete;
  TokenShards& operator=(const TokenShards&) = delete;

  const std::string& dir() const { return dir_; }
  int64_t vocab_size() const { return vocab_size_; }
  int token_bytes() const { return token_bytes_; }
  int64_t num_documents() const { return static_cast<int64_t>(doc_base_.size()); }
  int64_t num_tokens() const { return doc_start_.back(); }
  const std::vector<TokenShardInfo>& shards() const { return shards_; }  // the shards in use
  const std::vector<std::string>& skipped() const { return skipped_; }   // one message per shard

  int64_t document_length(int64_t doc) const { return doc_start_[doc + 1] - doc_start_[doc]; }
  // Corpus-wide index of the first token of `doc` (documents in shard order); [D + 1] entries.
  const std::vector<int64_t>& document_starts() const { return doc_start_; }

  // Copies tokens [offset, offset + n) of document `doc` into `out`; the range must lie inside
  // the document (checked by the callers that build sequences, not here: this is the hot path).
  void copy_tokens(int64_t doc, int64_t offset, int64_t n, int64_t* out) const;
  std::vector<int32_t> document(int64_t doc) const;

 private:
  TokenShards() = default;

  struct Mapping {
    void* address = nullptr;
    size_t bytes = 0;
  };
  // Maps and checks one shard (size, header, CRC-32, document offsets); DataError naming it.
  Mapping map_shard(const std::string& path, const TokenShardInfo& info) const;
  std::string dir_;
  int64_t vocab_size_ = 0;
  int token_bytes_ = 2;
  std::vector<TokenShardInfo> shards_;
  std::vector<std::string> skipped_;
  std::vector<Mapping> mappings_;
  std::vector<const uint8_t*> doc_base_;  // first token of each document in its mapping
  std::vector<int64_t> doc_start_;        // [D + 1] corpus-wide token offsets
};

}  // namespace batchlab::data
