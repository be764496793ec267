#include "experiments/data/token_shards.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "experiments/data/packed_format.h"  // crc32_of: one CRC-32 for every shard format

namespace batchlab::data {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "token shards are little-endian and read by direct mapping");

constexpr char kShardMagic[8] = {'B', 'L', 'T', 'O', 'K', 'S', 'H', 'D'};
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kHeaderBytes = 64;
constexpr const char* kIndexMagic = "batchlab-token-shards";

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t token_bytes;
  uint64_t documents;
  uint64_t tokens;
  uint8_t reserved[32];
};
static_assert(sizeof(Header) == kHeaderBytes);

int64_t shard_file_bytes(int64_t documents, int64_t tokens, int token_bytes) {
  return static_cast<int64_t>(kHeaderBytes) + 8 * (documents + 1) + token_bytes * tokens;
}

}  // namespace

int token_bytes_for_vocab(int64_t vocab_size) { return vocab_size <= 65536 ? 2 : 4; }

// ---- writer ----------------------------------------------------------------------------------

TokenShardWriter::TokenShardWriter(std::string dir, int64_t vocab_size, int64_t shard_bytes)
    : dir_(std::move(dir)),
      vocab_size_(vocab_size),
      token_bytes_(token_bytes_for_vocab(vocab_size)),
      shard_bytes_(shard_bytes),
      doc_offsets_{0} {
  if (vocab_size <= 0 || vocab_size > (int64_t{1} << 32)) {
    throw InputError(fmt::format("vocabulary size {} out of range", vocab_size));
  }
  if (shard_bytes <= 0)
    throw InputError(fmt::format("shard size {} bytes: must be positive", shard_bytes));
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (!std::filesystem::is_directory(dir_)) {
    throw InputError(fmt::format("{}: cannot create the output directory", dir_));
  }
  if (std::filesystem::exists(std::filesystem::path(dir_) / kShardIndexName)) {
    throw InputError(
        fmt::format("{}: already holds packed shards ({}); choose another --out or "
                    "remove it",
                    dir_, kShardIndexName));
  }
}

TokenShardWriter::~TokenShardWriter() = default;

void TokenShardWriter::add_document(const std::vector<int32_t>& tokens) {
  if (finished_) throw Error("TokenShardWriter: add_document after finish");
  const size_t at = tokens_.size();
  tokens_.resize(at + tokens.size() * static_cast<size_t>(token_bytes_));
  uint8_t* out = tokens_.data() + at;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const int32_t id = tokens[i];
    if (id < 0 || id >= vocab_size_) {
      tokens_.resize(at);
      throw InputError(fmt::format("token id {} outside the vocabulary [0, {})", id, vocab_size_));
    }
    if (token_bytes_ == 2) {
      const auto v = static_cast<uint16_t>(id);
      std::memcpy(out + 2 * i, &v, 2);
    } else {
      const auto v = static_cast<uint32_t>(id);
      std::memcpy(out + 4 * i, &v, 4);
    }
  }
  doc_offsets_.push_back(doc_offsets_.back() + tokens.size());
  if (static_cast<int64_t>(tokens_.size()) >= shard_bytes_) flush_shard();
}

void TokenShardWriter::flush_shard() {
  const int64_t documents = static_cast<int64_t>(doc_offsets_.size()) - 1;
  if (documents == 0) return;
  TokenShardInfo info;
  info.file = fmt::format("shard-{:05d}.bin", shards_.size());
  info.documents = documents;
  info.tokens = static_cast<int64_t>(doc_offsets_.back());
  info.bytes = shard_file_bytes(info.documents, info.tokens, token_bytes_);

  Header h{};
  std::memcpy(h.magic, kShardMagic, sizeof(kShardMagic));
  h.version = kFormatVersion;
  h.token_bytes = static_cast<uint32_t>(token_bytes_);
  h.documents = static_cast<uint64_t>(documents);
  h.tokens = doc_offsets_.back();

  const auto path = (std::filesystem::path(dir_) / info.file).string();
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw DataError(fmt::format("{}: cannot open for writing", path));
  const auto offsets_bytes = doc_offsets_.size() * sizeof(uint64_t);
  f.write(reinterpret_cast<const char*>(&h), sizeof(h));
  f.write(reinterpret_cast<const char*>(doc_offsets_.data()),
          static_cast<std::streamsize>(offsets_bytes));
  f.write(reinterpret_cast<const char*>(tokens_.data()),
          static_cast<std::streamsize>(tokens_.size()));
  f.close();
  if (!f) throw DataError(fmt::format("{}: write failed (disk full?)", path));

  uint32_t crc = crc32_z(0L, Z_NULL, 0);
  crc = crc32_z(crc, reinterpret_cast<const Bytef*>(&h), sizeof(h));
  crc = crc32_z(crc, reinterpret_cast<const Bytef*>(doc_offsets_.data()), offsets_bytes);
  crc = crc32_z(crc, tokens_.data(), tokens_.size());
  info.crc32 = crc;
  shards_.push_back(info);

  doc_offsets_.assign(1, 0);
  tokens_.clear();
}

void TokenShardWriter::finish() {
  if (finished_) return;
  flush_shard();
  std::ostringstream index;
  index << kIndexMagic << ' ' << kFormatVersion << '\n'
        << "vocab_size " << vocab_size_ << '\n'
        << "token_bytes " << token_bytes_ << '\n';
  for (const auto& s : shards_) {
    index << fmt::format("shard {} documents {} tokens {} bytes {} crc32 {:08x}\n", s.file,
                         s.documents, s.tokens, s.bytes, s.crc32);
  }
  // Written under a temporary name and renamed: the index appears complete or not at all.
  const auto path = std::filesystem::path(dir_) / kShardIndexName;
  write_file_atomically(path.string(), index.str());
  finished_ = true;
}

// ---- reader ----------------------------------------------------------------------------------

std::shared_ptr<const TokenShards> TokenShards::open(const std::string& dir, bool skip_corrupt) {
  const auto index_path = (std::filesystem::path(dir) / kShardIndexName).string();
  std::ifstream in(index_path);
  if (!in) {
    throw DataError(fmt::format("{}: no {} here: not a `batchlab data pack-text` output directory",
                                dir, kShardIndexName));
  }
  std::shared_ptr<TokenShards> s(new TokenShards());
  s->dir_ = dir;
  auto bad_index = [&](const std::string& why) {
    return DataError(fmt::format("{}: {} (re-run `batchlab data pack-text`)", index_path, why));
  };
  std::string word;
  int version = 0;
  if (!(in >> word >> version) || word != kIndexMagic ||
      version != static_cast<int>(kFormatVersion)) {
    throw bad_index("not a token shard index of format 1");
  }
  std::vector<TokenShardInfo> listed;
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string key;
    if (!(ls >> key)) continue;
    if (key == "vocab_size") {
      ls >> s->vocab_size_;
    } else if (key == "token_bytes") {
      ls >> s->token_bytes_;
    } else if (key == "shard") {
      TokenShardInfo info;
      std::string k1, k2, k3, k4, crc_hex;
      ls >> info.file >> k1 >> info.documents >> k2 >> info.tokens >> k3 >> info.bytes >> k4 >>
          crc_hex;
      char* end = nullptr;
      const unsigned long crc = std::strtoul(crc_hex.c_str(), &end, 16);
      if (!ls || k1 != "documents" || k2 != "tokens" || k3 != "bytes" || k4 != "crc32" ||
          info.file.find('/') != std::string::npos || crc_hex.empty() || *end != '\0') {
        throw bad_index(fmt::format("malformed line '{}'", line));
      }
      info.crc32 = static_cast<uint32_t>(crc);
      listed.push_back(info);
    } else {
      throw bad_index(fmt::format("unknown entry '{}'", key));
    }
    if (!ls) throw bad_index(fmt::format("malformed line '{}'", line));
  }
  if (s->vocab_size_ <= 0 || s->token_bytes_ != token_bytes_for_vocab(s->vocab_size_)) {
    throw bad_index(fmt::format("vocab_size {} and token_bytes {} do not match", s->vocab_size_,
                                s->token_bytes_));
  }

  s->doc_start_.push_back(0);
  for (const auto& info : listed) {
    if (info.documents <= 0 || info.tokens < 0 ||
        info.bytes != shard_file_bytes(info.documents, info.tokens, s->token_bytes_)) {
      throw bad_index(fmt::format("inconsistent sizes for {}", info.file));
    }
    const auto path = (std::filesystem::path(dir) / info.file).string();
    Mapping m;
    try {
      m = s->map_shard(path, info);
    } catch (const DataError& e) {
      if (!skip_corrupt) throw;
      s->skipped_.push_back(e.what());
      continue;
    }
    s->mappings_.push_back(m);
    s->shards_.push_back(info);
    const auto* bytes = static_cast<const uint8_t*>(m.address);
    const auto* offsets = reinterpret_cast<const uint64_t*>(bytes + kHeaderBytes);
    const uint8_t* tokens = bytes + kHeaderBytes + 8 * (info.documents + 1);
    for (int64_t d = 0; d < info.documents; ++d) {
      s->doc_base_.push_back(tokens + s->token_bytes_ * offsets[d]);
      s->doc_start_.push_back(s->doc_start_.back() +
                              static_cast<int64_t>(offsets[d + 1] - offsets[d]));
    }
  }
  if (s->shards_.empty()) {
    throw DataError(fmt::format("{}: no usable shard ({} listed, {} corrupt)", dir, listed.size(),
                                s->skipped_.size()));
  }
  return s;
}

TokenShards::Mapping TokenShards::map_shard(const std::string& path,
                                            const TokenShardInfo& info) const {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw DataError(fmt::format("{}: shard listed in {} cannot be opened: {}", path,
                                kShardIndexName, std::strerror(errno)));
  }
  struct stat st {};
  ::fstat(fd, &st);
  const auto size = static_cast<int64_t>(st.st_size);
  if (size != info.bytes) {
    ::close(fd);
    throw DataError(fmt::format(
        "{}: {} ({} bytes, the index says {}); re-run `batchlab data "
        "pack-text`",
        path, size < info.bytes ? "truncated" : "has trailing bytes", size, info.bytes));
  }
  void* address = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (address == MAP_FAILED) {
    throw DataError(fmt::format("{}: mmap failed: {}", path, std::strerror(errno)));
  }
  const Mapping m{address, static_cast<size_t>(size)};
  // Every later check unmaps before throwing, so a skipped shard leaves no mapping behind.
  auto fail = [&](const std::string& why) {
    ::munmap(m.address, m.bytes);
    return DataError(fmt::format("{}: {}; re-run `batchlab data pack-text`", path, why));
  };
  const auto* bytes = static_cast<const uint8_t*>(address);
  Header h{};
  std::memcpy(&h, bytes, sizeof(h));
  if (std::memcmp(h.magic, kShardMagic, sizeof(kShardMagic)) != 0 || h.version != kFormatVersion ||
      static_cast<int>(h.token_bytes) != token_bytes_ ||
      static_cast<int64_t>(h.documents) != info.documents ||
      static_cast<int64_t>(h.tokens) != info.tokens) {
    throw fail(fmt::format("header does not match {} (corrupt shard)", kShardIndexName));
  }
  const uint32_t crc = crc32_of(bytes, static_cast<size_t>(size));
  if (crc != info.crc32) {
    throw fail(
        fmt::format("checksum mismatch (crc32 {:08x}, the index says {:08x}): the shard is "
                    "corrupt",
                    crc, info.crc32));
  }
  const auto* offsets = reinterpret_cast<const uint64_t*>(bytes + kHeaderBytes);
  for (int64_t d = 0; d < info.documents; ++d) {
    if (offsets[d] > offsets[d + 1] || offsets[d + 1] > static_cast<uint64_t>(info.tokens)) {
      throw fail("document offsets out of order (corrupt shard)");
    }
  }
  return m;
}

TokenShards::~TokenShards() {
  for (const auto& m : mappings_) ::munmap(m.address, m.bytes);
}

void TokenShards::copy_tokens(int64_t doc, int64_t offset, int64_t n, int64_t* out) const {
  const uint8_t* base = doc_base_[doc];
  if (token_bytes_ == 2) {
    const auto* p = reinterpret_cast<const uint16_t*>(base) + offset;
    for (int64_t i = 0; i < n; ++i) out[i] = p[i];
  } else {
    const auto* p = reinterpret_cast<const uint32_t*>(base) + offset;
    for (int64_t i = 0; i < n; ++i) out[i] = p[i];
  }
}

std::vector<int32_t> TokenShards::document(int64_t doc) const {
  std::vector<int64_t> wide(static_cast<size_t>(document_length(doc)));
  copy_tokens(doc, 0, static_cast<int64_t>(wide.size()), wide.data());
  return std::vector<int32_t>(wide.begin(), wide.end());
}

}  // namespace batchlab::data
