// Reader for IDX files, the format of MNIST and Fashion-MNIST: a 4-byte magic (two zero bytes, a
// type code, the number of dimensions), one big-endian uint32 per dimension, then the data in
// row-major order. Files may be gzip-compressed or plain: zlib's gz* functions read both
// transparently.
//
// Only type code 0x08 (unsigned byte) is supported: it is the type of every image and label file
// batchlab uses. Every problem is a batchlab::DataError whose message names the file, what is
// wrong, and what to do about it.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace batchlab::data {

// Largest payload read_idx accepts (16 GiB): a header claiming more is treated as corrupt rather
// than attempting the allocation.
inline constexpr int64_t kMaxIdxBytes = int64_t{1} << 34;

// Reads a whole IDX file (gzip or plain) into a contiguous uint8 tensor whose shape is the file's
// dims. Throws DataError: missing or unreadable file, bad magic, unsupported type code, a dimension
// count of 0, dims whose product exceeds kMaxIdxBytes, truncated data, trailing bytes, corrupt gzip
// stream.
torch::Tensor read_idx(const std::string& path);

// The first dimension of an IDX file (its sample count), from the header alone; nullopt when the
// file is missing or its header unreadable (read_idx then says why).
std::optional<int64_t> read_idx_count(const std::string& path);

// An IDX image file ([N, H, W] uint8) as uint8 [N, 1, H, W]. Throws DataError unless it has 3 dims.
torch::Tensor read_idx_images(const std::string& path);

// An IDX label file ([N] uint8) as int64 [N]. Throws DataError unless it has 1 dim.
torch::Tensor read_idx_labels(const std::string& path);

}  // namespace batchlab::data
