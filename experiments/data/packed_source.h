// Reading a pack written by `batchlab data pack` (format: packed_format.h). Shards are
// memory-mapped read-only, so a raw sample is read with no copy and no decode: the resampler reads
// the mapped pixels directly, and the page cache is shared by every loader thread and process.
//
// Integrity: on open every shard's size is compared with the index (a truncated or missing shard
// is named at once); the first read of a sample in a shard verifies that shard's CRC-32 (once per
// process; a few hundred MB/s per shard, paid once). A damaged shard throws DataError naming the
// file from open (skip_corrupt = false) or from each read of its samples (skip_corrupt = true, so
// the loader skips and counts them).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "experiments/data/image_source.h"
#include "experiments/data/packed_format.h"

namespace batchlab::data {

class PackedImageSource : public ImageSource {
 public:
  // Throws DataError for an unreadable index, and (unless skip_corrupt) for a missing, truncated
  // or oversized shard.
  PackedImageSource(const std::string& dir, bool skip_corrupt);
  ~PackedImageSource() override;
  PackedImageSource(const PackedImageSource&) = delete;
  PackedImageSource& operator=(const PackedImageSource&) = delete;

  int64_t size(Split split) const override;
  int64_t label(Split split, int64_t index) const override;
  std::string location(Split split, int64_t index) const override;
  const std::vector<std::string>& class_names() const override { return index_.classes; }
  std::string description() const override;
  std::unique_ptr<ImageReader> make_reader() const override;

  const PackIndex& index() const { return index_; }
  const PackedSample& sample(Split split, int64_t index) const;
  // The sample's bytes inside its mapped shard, after the shard's checksum was verified. Throws
  // DataError naming the shard file when the shard is damaged. Thread-safe.
  const uint8_t* sample_bytes(Split split, int64_t index) const;
  // Problems found on open (only non-empty with skip_corrupt): one message per damaged shard.
  std::vector<std::string> shard_problems() const;

 private:
  struct Shard {
    std::string path;
    const uint8_t* data = nullptr;
    size_t mapped = 0;
    std::string open_problem;  // missing or wrong size; fixed after construction
    std::once_flag verified;
    std::string checksum_problem;  // written once, inside `verified`
  };
  const std::vector<PackedSample>& samples(Split split) const;
  void verify(Shard& shard, const PackedShard& entry) const;
  void unmap_all();

  std::string dir_;
  PackIndex index_;
  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace batchlab::data
