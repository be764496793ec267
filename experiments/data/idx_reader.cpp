#include "experiments/data/idx_reader.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/errors.h"

namespace batchlab::data {
namespace {

// Reads are issued in chunks this large: one gzread call per 16 MiB rather than per element keeps
// the 47 MB Fashion-MNIST training images at a handful of calls. gzread takes an unsigned and
// returns an int, so a chunk must stay below INT_MAX anyway.
constexpr int64_t kChunkBytes = int64_t{1} << 24;
// zlib's internal input buffer (default 8 KiB): larger means fewer read(2) calls.
constexpr unsigned kGzBufferBytes = 1u << 18;

constexpr uint8_t kTypeUnsignedByte = 0x08;

// Deflate's largest expansion (zlib's technical details: 1032:1), so a .gz of N bytes holds at
// most 1032 N bytes of data.
constexpr int64_t kMaxDeflateRatio = 1032;

std::string type_name(uint8_t type_code) {
  switch (type_code) {
    case 0x08:
      return "unsigned byte";
    case 0x09:
      return "signed byte";
    case 0x0B:
      return "int16";
    case 0x0C:
      return "int32";
    case 0x0D:
      return "float32";
    case 0x0E:
      return "float64";
    default:
      return "not an IDX type";
  }
}

// Owns a zlib file handle. gzopen reads plain files as they are, so one code path serves both.
class GzFile {
 public:
  explicit GzFile(const std::string& path) : path_(path), file_(gzopen(path.c_str(), "rb")) {
    if (file_ == nullptr) {
      // gzopen sets errno for open(2) failures; 0 means zlib itself could not allocate its state.
      const int err = errno;
      throw DataError(fmt::format("{}: cannot open IDX file: {} (check its permissions)", path,
                                  err != 0 ? std::strerror(err) : "out of memory"));
    }
    gzbuffer(file_, kGzBufferBytes);
  }
  ~GzFile() { gzclose(file_); }
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;

  // Reads up to `n` bytes into `dst`, stopping early only at the end of the data. Returns the bytes
  // read. A gzip stream that ends without its trailer (a truncated .gz) also stops the read; that
  // is reported through `stream_truncated()` so the caller can say so. Corrupt compressed data
  // throws.
  int64_t read(uint8_t* dst, int64_t n) {
    int64_t done = 0;
    while (done < n) {
      const auto want = static_cast<unsigned>(std::min(kChunkBytes, n - done));
      const int got = gzread(file_, dst + done, want);
      if (got < 0) {
        check_stream(done);
        break;  // only a truncated stream gets here: check_stream throws for everything else
      }
      if (got == 0) {
        check_stream(done);
        break;
      }
      done += got;
    }
    return done;
  }

  bool stream_truncated() const { return stream_truncated_; }
  // Whether the file is read as it is (not a gzip stream); known once something was read.
  bool direct() const { return gzdirect(file_) == 1; }

 private:
  // Classifies a short read: Z_BUF_ERROR is zlib's "unexpected end of file" (a cut-off gzip
  // stream), which the caller reports as truncation; any other error is corrupt data or an I/O
  // failure.
  void check_stream(int64_t done_in_this_read) {
    int errnum = Z_OK;
    const char* message = gzerror(file_, &errnum);
    if (errnum == Z_OK || errnum == Z_STREAM_END) return;
    if (errnum == Z_BUF_ERROR) {
      stream_truncated_ = true;
      return;
    }
    if (errnum == Z_ERRNO) message = std::strerror(errno);
    throw DataError(fmt::format(
        "{}: corrupt gzip data ({}) after {} more bytes; the file is damaged: re-download or "
        "reinstall it",
        path_, message != nullptr ? message : "unknown zlib error", done_in_this_read));
  }

  std::string path_;
  gzFile file_;
  bool stream_truncated_ = false;
};

uint32_t big_endian_u32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

std::string gzip_note(const GzFile& file) {
  return file.stream_truncated() ? " (the gzip stream ends early)" : "";
}

}  // namespace

torch::Tensor read_idx(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) {
    throw DataError(fmt::format("{}: IDX file not found (check the path)", path));
  }
  if (!fs::is_regular_file(status)) {
    throw DataError(
        fmt::format("{}: not a regular file; expected an IDX file (.gz or plain)", path));
  }

  GzFile file(path);

  // Magic: two zero bytes, the element type code, the number of dimensions.
  std::array<uint8_t, 4> magic{};
  const int64_t magic_read = file.read(magic.data(), 4);
  if (magic_read < 4) {
    throw DataError(
        fmt::format("{}: truncated header: expected a 4-byte magic number, got {} bytes{}; the "
                    "file is empty or cut short: re-download or reinstall it",
                    path, magic_read, gzip_note(file)));
  }
  if (magic[0] != 0 || magic[1] != 0) {
    throw DataError(fmt::format(
        "{}: bad magic number 0x{:08x}: an IDX file starts with two zero bytes, a type code and a "
        "dimension count; this is not an IDX file (or it was compressed twice)",
        path, big_endian_u32(magic.data())));
  }
  const uint8_t type_code = magic[2];
  if (type_code != kTypeUnsignedByte) {
    throw DataError(fmt::format(
        "{}: unsupported IDX type code 0x{:02x} ({}); only 0x08 (unsigned byte) files are read: "
        "convert the file to uint8",
        path, type_code, type_name(type_code)));
  }
  const int ndims = magic[3];
  if (ndims == 0) {
    throw DataError(fmt::format(
        "{}: IDX header declares 0 dimensions; a data file has at least one: the header is corrupt "
        "(re-download the file)",
        path));
  }

  std::vector<uint8_t> dim_bytes(static_cast<size_t>(ndims) * 4);
  const int64_t dims_read = file.read(dim_bytes.data(), static_cast<int64_t>(dim_bytes.size()));
  if (dims_read < static_cast<int64_t>(dim_bytes.size())) {
    throw DataError(fmt::format(
        "{}: truncated header: {} dimensions need {} bytes, got {}{}; re-download or reinstall the "
        "file",
        path, ndims, dim_bytes.size(), dims_read, gzip_note(file)));
  }
  std::vector<int64_t> dims(static_cast<size_t>(ndims));
  int64_t payload = 1;
  // The product of the dims other than 0 is bounded too: LibTorch refuses a shape whose sizes
  // overflow even when one of them is 0 (a c10::Error, not a DataError; found by fuzz_idx with
  // dims [2051, 2, 0, 4294967295, ...]).
  int64_t nonzero = 1;
  bool too_large = false;
  for (int i = 0; i < ndims; ++i) {
    dims[static_cast<size_t>(i)] = big_endian_u32(dim_bytes.data() + 4 * i);
    const int64_t d = dims[static_cast<size_t>(i)];
    // Overflow-safe running product: dims are uint32, so two of them can exceed int64.
    if (d != 0 && nonzero > kMaxIdxBytes / d) too_large = true;
    nonzero = too_large || d == 0 ? nonzero : nonzero * d;
    payload = too_large ? payload : payload * d;
  }
  if (too_large) {
    throw DataError(fmt::format(
        "{}: IDX header declares dims [{}], more than the {} GiB limit; the header is corrupt "
        "(re-download the file)",
        path, fmt::join(dims, ", "), kMaxIdxBytes >> 30));
  }

  // Before the tensor is allocated: a header can claim gigabytes in a file of a few bytes (a
  // damaged or hostile file; found by fuzz/idx_fuzz.cpp: 10 bytes claiming 4 GB took 10 s and
  // 1 GB of memory before the truncation was noticed). A plain file holds exactly what follows
  // its header; a .gz cannot hold more than kMaxDeflateRatio times its size.
  const int64_t header_bytes = 4 + 4 * static_cast<int64_t>(ndims);
  if (const auto file_bytes = static_cast<int64_t>(fs::file_size(path, ec)); !ec) {
    if (file.direct() && payload > file_bytes - header_bytes) {
      throw DataError(fmt::format(
          "{}: truncated data: dims [{}] need {} bytes, got {}; the file is incomplete: "
          "re-download or reinstall it",
          path, fmt::join(dims, ", "), payload, std::max<int64_t>(0, file_bytes - header_bytes)));
    }
    if (!file.direct() && payload / kMaxDeflateRatio > file_bytes) {
      throw DataError(fmt::format(
          "{}: truncated data: dims [{}] need {} bytes, more than a gzip file of {} bytes can "
          "hold; the file is incomplete or its header is corrupt: re-download or reinstall it",
          path, fmt::join(dims, ", "), payload, file_bytes));
    }
  }

  // Read straight into the tensor's storage: no intermediate buffer.
  torch::Tensor out = torch::empty(dims, torch::kUInt8);
  const int64_t got = file.read(out.data_ptr<uint8_t>(), payload);
  if (got < payload) {
    throw DataError(fmt::format(
        "{}: truncated data: dims [{}] need {} bytes, got {}{}; the file is incomplete: "
        "re-download or reinstall it",
        path, fmt::join(dims, ", "), payload, got, gzip_note(file)));
  }

  // Anything after the declared payload means the header and the data disagree.
  std::array<uint8_t, 1 << 16> rest{};
  int64_t trailing = 0;
  for (;;) {
    const int64_t n = file.read(rest.data(), static_cast<int64_t>(rest.size()));
    trailing += n;
    if (n < static_cast<int64_t>(rest.size())) break;
  }
  if (trailing > 0) {
    throw DataError(fmt::format(
        "{}: trailing garbage: {} bytes after the {} bytes that dims [{}] declare; the header and "
        "the data disagree (re-download the file)",
        path, trailing, payload, fmt::join(dims, ", ")));
  }
  return out;
}

std::optional<int64_t> read_idx_count(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  try {
    GzFile file(path);
    std::array<uint8_t, 8> head{};  // magic, then the first dimension
    if (file.read(head.data(), 8) < 8 || head[0] != 0 || head[1] != 0 || head[3] == 0) {
      return std::nullopt;
    }
    return static_cast<int64_t>(big_endian_u32(head.data() + 4));
  } catch (const DataError&) {
    return std::nullopt;
  }
}

torch::Tensor read_idx_images(const std::string& path) {
  torch::Tensor raw = read_idx(path);
  if (raw.dim() != 3) {
    throw DataError(fmt::format(
        "{}: expected an IDX image file with 3 dims [N, H, W], got {} dims [{}]; is it a label "
        "file?",
        path, raw.dim(), fmt::join(raw.sizes(), ", ")));
  }
  // [N, H, W] -> [N, 1, H, W]: one grayscale channel, the layout every model takes.
  return raw.unsqueeze(1);
}

torch::Tensor read_idx_labels(const std::string& path) {
  torch::Tensor raw = read_idx(path);
  if (raw.dim() != 1) {
    throw DataError(fmt::format(
        "{}: expected an IDX label file with 1 dim [N], got {} dims [{}]; is it an image file?",
        path, raw.dim(), fmt::join(raw.sizes(), ", ")));
  }
  return raw.to(torch::kLong);
}

}  // namespace batchlab::data
