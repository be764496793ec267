// `batchlab data pack`: an image folder (image_folder.h) -> packed shards (packed_format.h).
// Every image is decoded (DCT-reduced where that still covers the target), resized so its shorter
// side is `size` (smaller images are kept as they are, never enlarged) and stored raw or re-encoded
// as JPEG. Samples keep the folder order; worker threads decode blocks of images in parallel and
// the calling thread appends them to the shards in order, so the output is identical for any
// number of workers.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "experiments/data/image_resample.h"
#include "experiments/data/jpeg_codec.h"
#include "experiments/data/packed_format.h"

namespace batchlab::data {

struct PackOptions {
  int64_t size = 256;       // shorter side of the stored samples
  double shard_mb = 256.0;  // a shard is closed before it would grow past this many MiB
  int64_t workers = 0;      // decoding threads; 0 = the hardware concurrency
  PackFormat format = PackFormat::raw;
  int quality = 90;           // re-encoded JPEG samples
  bool skip_corrupt = false;  // unreadable images: skipped and listed instead of an error
};

struct PackReport {
  int64_t train = 0;  // samples written
  int64_t val = 0;
  int64_t shards = 0;
  uint64_t bytes = 0;
  std::vector<std::string> skipped;  // "path: reason" for each unreadable image left out
};

// Packs SRC (ROOT/train/<class>/*.JPEG, optional ROOT/val/...) into OUT_DIR (created if needed).
// Throws InputError for bad options, an unusable source folder or an OUT_DIR that already holds a
// pack; DataError naming the file for an unreadable image unless options.skip_corrupt. `progress`
// (optional) receives a line now and then.
PackReport pack_image_folder(const std::string& src, const std::string& out_dir,
                             const PackOptions& options,
                             const std::function<void(const std::string&)>& progress = {});

// Size (width, height) of an image whose shorter side becomes `size` (unchanged when already no
// longer than that), keeping the aspect ratio.
std::pair<int64_t, int64_t> packed_dimensions(int64_t width, int64_t height, int64_t size);

}  // namespace batchlab::data
