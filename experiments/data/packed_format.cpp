#include "experiments/data/packed_format.h"

#include <fmt/format.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "experiments/data/jpeg_codec.h"

namespace batchlab::data {
namespace fs = std::filesystem;
namespace {

constexpr char kPackMagic[8] = {'B', 'L', 'P', 'A', 'C', 'K', '0', '1'};

class ByteWriter {
 public:
  void u32(uint32_t v) { put(v, 4); }
  void u64(uint64_t v) { put(v, 8); }
  void str(const std::string& s) {
    u32(static_cast<uint32_t>(s.size()));
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  void raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
  }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  void put(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  std::vector<uint8_t> bytes_;
};

// Reads what ByteWriter wrote; any read past the end is a truncated index.
class ByteReader {
 public:
  ByteReader(const std::vector<uint8_t>& bytes, size_t end, std::string path)
      : bytes_(bytes), end_(end), path_(std::move(path)) {}
  uint32_t u32() { return static_cast<uint32_t>(get(4)); }
  uint64_t u64() { return get(8); }
  std::string str() {
    const uint32_t n = u32();
    need(n);
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  void expect_magic() {
    need(sizeof(kPackMagic));
    if (std::memcmp(bytes_.data(), kPackMagic, sizeof(kPackMagic)) != 0) {
      throw DataError(fmt::format("{}: not a batchlab pack index (bad magic)", path_));
    }
    pos_ += sizeof(kPackMagic);
  }
  size_t position() const { return pos_; }
  size_t remaining() const { return end_ - pos_; }

 private:
  void need(size_t n) {
    if (pos_ + n > end_) {
      throw DataError(
          fmt::format("{}: truncated pack index (needs more than its {} bytes); "
                      "re-run `batchlab data pack`",
                      path_, bytes_.size()));
    }
  }
  uint64_t get(int n) {
    need(static_cast<size_t>(n));
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(bytes_[pos_ + i]) << (8 * i);
    pos_ += static_cast<size_t>(n);
    return v;
  }
  const std::vector<uint8_t>& bytes_;
  size_t end_;
  size_t pos_ = 0;
  std::string path_;
};

// One sample's entry: shard, offset, length, width, height, label.
constexpr uint64_t kSampleBytes = 4 + 8 + 4 + 4 + 4 + 4;

void write_samples(ByteWriter& w, const std::vector<PackedSample>& samples) {
  w.u64(samples.size());
  for (const auto& s : samples) {
    w.u32(s.shard);
    w.u64(s.offset);
    w.u32(s.length);
    w.u32(s.width);
    w.u32(s.height);
    w.u32(s.label);
  }
}

std::vector<PackedSample> read_samples(ByteReader& r, const PackIndex& index,
                                       const std::string& path, const char* split) {
  const uint64_t n = r.u64();
  std::vector<PackedSample> out;
  // No more than the bytes left can hold (28 per sample): a count of 2^64 in a 20-byte index
  // reserved 512 MB before the truncation was found (fuzz/pack_index_fuzz.cpp).
  out.reserve(static_cast<size_t>(std::min<uint64_t>(n, r.remaining() / kSampleBytes)));
  for (uint64_t i = 0; i < n; ++i) {
    PackedSample s;
    s.shard = r.u32();
    s.offset = r.u64();
    s.length = r.u32();
    s.width = r.u32();
    s.height = r.u32();
    s.label = r.u32();
    // offset + length could wrap around 2^64 and pass: compared without the sum.
    if (s.shard >= index.shards.size() || s.label >= index.classes.size() ||
        s.offset > index.shards[s.shard].bytes ||
        s.length > index.shards[s.shard].bytes - s.offset) {
      throw DataError(
          fmt::format("{}: {} sample {} refers to shard {}, bytes [{}, {}) and label {}, "
                      "outside the {} shards / {} classes it lists",
                      path, split, i, s.shard, s.offset, s.offset + s.length, s.label,
                      index.shards.size(), index.classes.size()));
    }
    out.push_back(s);
  }
  return out;
}

}  // namespace

const char* to_string(PackFormat format) { return format == PackFormat::raw ? "raw" : "jpeg"; }

PackFormat parse_pack_format(const std::string& text, const std::string& what) {
  if (text == "raw") return PackFormat::raw;
  if (text == "jpeg") return PackFormat::jpeg;
  throw InputError(fmt::format("{} {}: unknown sample format; valid: raw, jpeg", what, text));
}

uint32_t crc32_of(const uint8_t* data, size_t size, uint32_t crc) {
  uLong c = crc;
  // zlib's length argument is 32-bit: feed large buffers in 1 GiB pieces.
  constexpr size_t kPiece = size_t{1} << 30;
  while (size > 0) {
    const size_t n = std::min(size, kPiece);
    c = ::crc32(c, data, static_cast<uInt>(n));
    data += n;
    size -= n;
  }
  return static_cast<uint32_t>(c);
}

bool is_packed_dataset(const std::string& dir) {
  return fs::is_regular_file(fs::path(dir) / kPackIndexFile);
}

void write_pack_index(const std::string& dir, const PackIndex& index) {
  ByteWriter w;
  w.raw(kPackMagic, sizeof(kPackMagic));
  w.u32(static_cast<uint32_t>(index.format));
  w.u32(index.size);
  w.u32(index.quality);
  w.u32(static_cast<uint32_t>(index.classes.size()));
  for (const auto& c : index.classes) w.str(c);
  w.u32(static_cast<uint32_t>(index.shards.size()));
  for (const auto& s : index.shards) {
    w.str(s.file);
    w.u64(s.bytes);
    w.u32(s.crc32);
    w.u64(s.samples);
  }
  write_samples(w, index.train);
  write_samples(w, index.val);
  w.u32(crc32_of(w.bytes().data(), w.bytes().size()));

  const fs::path final_path = fs::path(dir) / kPackIndexFile;
  write_file_atomically(
      final_path.string(),
      std::string_view(reinterpret_cast<const char*>(w.bytes().data()), w.bytes().size()));
}

PackIndex read_pack_index(const std::string& dir) {
  const std::string path = (fs::path(dir) / kPackIndexFile).string();
  std::vector<uint8_t> bytes;
  read_file_bytes(path, bytes);
  if (bytes.size() < sizeof(kPackMagic) + 4) {
    throw DataError(fmt::format("{}: truncated pack index ({} bytes)", path, bytes.size()));
  }
  const size_t body = bytes.size() - 4;
  uint32_t stored = 0;
  for (int i = 0; i < 4; ++i) stored |= static_cast<uint32_t>(bytes[body + i]) << (8 * i);
  ByteReader r(bytes, body, path);
  r.expect_magic();
  if (crc32_of(bytes.data(), body) != stored) {
    throw DataError(
        fmt::format("{}: checksum mismatch (the index is damaged or truncated); "
                    "re-run `batchlab data pack`",
                    path));
  }
  PackIndex index;
  const uint32_t format = r.u32();
  if (format > static_cast<uint32_t>(PackFormat::jpeg)) {
    throw DataError(fmt::format("{}: unknown sample format {}", path, format));
  }
  index.format = static_cast<PackFormat>(format);
  index.size = r.u32();
  index.quality = r.u32();
  const uint32_t classes = r.u32();
  for (uint32_t i = 0; i < classes; ++i) index.classes.push_back(r.str());
  const uint32_t shards = r.u32();
  for (uint32_t i = 0; i < shards; ++i) {
    PackedShard s;
    s.file = r.str();
    s.bytes = r.u64();
    s.crc32 = r.u32();
    s.samples = r.u64();
    index.shards.push_back(std::move(s));
  }
  index.train = read_samples(r, index, path, "train");
  index.val = read_samples(r, index, path, "val");
  if (r.position() != body) {
    throw DataError(
        fmt::format("{}: {} unexpected bytes after the sample tables", path, body - r.position()));
  }
  return index;
}

}  // namespace batchlab::data
