// The on-disk format of `batchlab data pack`: a directory with shard files of pre-resized samples
// (raw interleaved RGB, or re-encoded JPEG) and one index file.
//
//   DIR/pack.index          magic "BLPACK01", format, size, class names, the shard table (file
//   name,
//                           byte count, CRC-32, sample count) and per split one 28-byte entry per
//                           sample (shard, offset, length, width, height, label); little-endian;
//                           ends with the CRC-32 of everything before it.
//   DIR/train-00000.shard   samples back to back, in folder order; no header, so a shard is
//   DIR/val-00000.shard     memory-mapped and a sample is a pointer into it.
//
// A shard's CRC-32 covers the whole file; readers check the size on open (a truncated shard is
// named at once) and the checksum the first time a sample of the shard is read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace batchlab::data {

enum class PackFormat : uint32_t {
  raw = 0,   // width * height * 3 bytes of interleaved RGB: no decoding at all when reading
  jpeg = 1,  // a JPEG file's bytes: about 10x smaller, decoded when read
};

const char* to_string(PackFormat format);
// "raw" | "jpeg"; throws InputError naming `what` (e.g. "--format") otherwise.
PackFormat parse_pack_format(const std::string& text, const std::string& what);

struct PackedShard {
  std::string file;  // name inside the pack directory
  uint64_t bytes = 0;
  uint32_t crc32 = 0;
  uint64_t samples = 0;
};

struct PackedSample {
  uint32_t shard = 0;  // position in PackIndex::shards
  uint64_t offset = 0;
  uint32_t length = 0;
  uint32_t width = 0;
  uint32_t height = 0;
  uint32_t label = 0;
};

struct PackIndex {
  PackFormat format = PackFormat::raw;
  uint32_t size = 0;  // shorter side the samples were resized to (smaller images kept as they were)
  uint32_t quality = 0;  // JPEG quality of re-encoded samples (0 for raw)
  std::vector<std::string> classes;
  std::vector<PackedShard> shards;
  std::vector<PackedSample> train;
  std::vector<PackedSample> val;
};

inline constexpr const char* kPackIndexFile = "pack.index";

// True when `dir` holds a pack index.
bool is_packed_dataset(const std::string& dir);

// Writes DIR/pack.index through a temporary file and a rename, so a reader never sees half of one.
void write_pack_index(const std::string& dir, const PackIndex& index);

// Reads DIR/pack.index. Throws DataError naming the file when it is truncated, fails its checksum
// or refers to a shard or label that does not exist.
PackIndex read_pack_index(const std::string& dir);

// CRC-32 (zlib's) of `size` bytes, continuing from `crc` (0 to start).
uint32_t crc32_of(const uint8_t* data, size_t size, uint32_t crc = 0);

}  // namespace batchlab::data
