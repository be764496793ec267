#include "experiments/data/packed_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/errors.h"
#include "experiments/data/image_folder.h"

namespace batchlab::data {
namespace fs = std::filesystem;
namespace {

// Per-thread codec state, reused across images.
struct PackWorker {
  JpegDecoder decoder;
  JpegEncoder encoder;
  ResampleScratch scratch;
  std::vector<uint8_t> file;
  std::vector<uint8_t> pixels;
};

struct PackedImage {
  std::vector<uint8_t> bytes;
  uint32_t width = 0;
  uint32_t height = 0;
  std::string error;           // a DataError's message: the image is unreadable
  std::exception_ptr failure;  // anything else (out of memory, ...): rethrown
};

void pack_one(PackWorker& w, const std::string& path, const PackOptions& options,
              PackedImage& out) {
  read_file_bytes(path, w.file);
  const JpegHeader header = w.decoder.read_header(w.file.data(), w.file.size(), path);
  const auto [tw, th] = packed_dimensions(header.width, header.height, options.size);
  const DctScale scale = choose_dct_scale(static_cast<double>(header.width),
                                          static_cast<double>(header.height), tw, th);
  ImageView image = w.decoder.decode(w.file.data(), w.file.size(), scale, path);
  if (image.width != tw || image.height != th) {
    w.pixels.resize(static_cast<size_t>(tw * th * 3));
    const CropBox whole{0.0, 0.0, static_cast<double>(image.width),
                        static_cast<double>(image.height)};
    resample_crop(image, whole, tw, th, false, PixelLayout::hwc, w.pixels.data(), w.scratch);
    image = {w.pixels.data(), tw, th, tw * 3};
  }
  out.width = static_cast<uint32_t>(tw);
  out.height = static_cast<uint32_t>(th);
  if (options.format == PackFormat::raw) {
    out.bytes.assign(image.pixels, image.pixels + tw * th * 3);
  } else {
    out.bytes = w.encoder.encode(image, options.quality);
  }
}

// Appends samples to numbered shard files, starting a new one before a shard would pass the limit.
class ShardWriter {
 public:
  ShardWriter(fs::path dir, std::string prefix, uint64_t limit, PackIndex& index)
      : dir_(std::move(dir)), prefix_(std::move(prefix)), limit_(limit), index_(index) {}

  PackedSample append(const std::vector<uint8_t>& bytes, uint32_t width, uint32_t height,
                      uint32_t label) {
    if (!open_ || (current().samples > 0 && current().bytes + bytes.size() > limit_)) start_shard();
    PackedShard& shard = current();
    PackedSample s;
    s.shard = static_cast<uint32_t>(index_.shards.size() - 1);
    s.offset = shard.bytes;
    s.length = static_cast<uint32_t>(bytes.size());
    s.width = width;
    s.height = height;
    s.label = label;
    out_.write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
    if (!out_) throw Error(fmt::format("{}: write failed (disk full?)", path_.string()));
    shard.crc32 = crc32_of(bytes.data(), bytes.size(), shard.crc32);
    shard.bytes += bytes.size();
    shard.samples += 1;
    return s;
  }

  void finish() {
    if (!open_) return;
    out_.close();
    if (!out_) throw Error(fmt::format("{}: write failed while closing", path_.string()));
    open_ = false;
  }

 private:
  PackedShard& current() { return index_.shards.back(); }
  void start_shard() {
    finish();
    const std::string name = fmt::format("{}-{:05d}.shard", prefix_, number_++);
    path_ = dir_ / name;
    out_.open(path_, std::ios::binary | std::ios::trunc);
    if (!out_) throw Error(fmt::format("{}: cannot create the shard file", path_.string()));
    index_.shards.push_back({name, 0, 0, 0});
    open_ = true;
  }

  fs::path dir_;
  std::string prefix_;
  uint64_t limit_;
  PackIndex& index_;
  std::ofstream out_;
  fs::path path_;
  int number_ = 0;
  bool open_ = false;
};

// Decodes and resizes `files[begin, end)` on `workers` threads into `out` (same positions).
void pack_block(const std::vector<std::string>& files, size_t begin, size_t end,
                std::vector<PackWorker>& workers, const PackOptions& options,
                std::vector<PackedImage>& out) {
  out.assign(end - begin, PackedImage{});
  std::atomic<size_t> next{begin};
  auto work = [&](PackWorker& w) {
    for (size_t i = next++; i < end; i = next++) {
      PackedImage& r = out[i - begin];
      try {
        pack_one(w, files[i], options, r);
      } catch (const DataError& e) {
        r.error = e.what();
      } catch (...) {
        r.failure = std::current_exception();
      }
    }
  };
  std::vector<std::thread> threads;
  for (size_t t = 1; t < workers.size(); ++t) threads.emplace_back(work, std::ref(workers[t]));
  work(workers[0]);
  for (auto& t : threads) t.join();
}

}  // namespace

std::pair<int64_t, int64_t> packed_dimensions(int64_t width, int64_t height, int64_t size) {
  const int64_t shorter = std::min(width, height);
  if (shorter <= size) return {width, height};
  const double f = static_cast<double>(size) / static_cast<double>(shorter);
  const int64_t w = width == shorter ? size : std::max<int64_t>(1, std::llround(width * f));
  const int64_t h = height == shorter ? size : std::max<int64_t>(1, std::llround(height * f));
  return {w, h};
}

PackReport pack_image_folder(const std::string& src, const std::string& out_dir,
                             const PackOptions& options,
                             const std::function<void(const std::string&)>& progress) {
  if (options.size < 8)
    throw InputError(fmt::format("--size {}: must be at least 8 pixels", options.size));
  if (!(options.shard_mb > 0))
    throw InputError(fmt::format("--shard-mb {}: must be positive", options.shard_mb));
  if (options.quality < 1 || options.quality > 100) {
    throw InputError(fmt::format("--quality {}: must be in 1..100", options.quality));
  }
  if (options.workers < 0)
    throw InputError(fmt::format("--workers {}: must be >= 0", options.workers));
  if (is_packed_dataset(out_dir)) {
    throw InputError(fmt::format("{}: already holds a pack ({}); remove it or choose another --out",
                                 out_dir, kPackIndexFile));
  }
  const ImageFolderIndex folder = scan_image_folder(src);
  fs::create_directories(out_dir);

  const int64_t threads = options.workers > 0
                              ? options.workers
                              : std::max<int64_t>(1, std::thread::hardware_concurrency());
  std::vector<PackWorker> workers(static_cast<size_t>(threads));
  PackIndex index;
  index.format = options.format;
  index.size = static_cast<uint32_t>(options.size);
  index.quality = options.format == PackFormat::jpeg ? static_cast<uint32_t>(options.quality) : 0;
  index.classes = folder.classes;
  const auto limit = static_cast<uint64_t>(options.shard_mb * 1024.0 * 1024.0);
  const size_t block = static_cast<size_t>(std::max<int64_t>(64, 16 * threads));

  PackReport report;
  auto last_line = std::chrono::steady_clock::now();
  for (const bool is_train : {true, false}) {
    const ImageFolderSplit& split = is_train ? folder.train : folder.val;
    const char* name = is_train ? "train" : "val";
    std::vector<PackedSample>& samples = is_train ? index.train : index.val;
    ShardWriter writer(out_dir, name, limit, index);
    std::vector<PackedImage> images;
    for (size_t begin = 0; begin < split.files.size(); begin += block) {
      const size_t end = std::min(split.files.size(), begin + block);
      pack_block(split.files, begin, end, workers, options, images);
      for (size_t i = begin; i < end; ++i) {
        PackedImage& image = images[i - begin];
        if (image.failure) std::rethrow_exception(image.failure);
        if (!image.error.empty()) {
          if (!options.skip_corrupt) throw DataError(image.error);
          report.skipped.push_back(image.error);
          continue;
        }
        samples.push_back(writer.append(image.bytes, image.width, image.height,
                                        static_cast<uint32_t>(split.labels[i])));
      }
      const auto now = std::chrono::steady_clock::now();
      if (progress && (now - last_line > std::chrono::seconds(5) || end == split.files.size())) {
        progress(fmt::format("{}: {}/{} images", name, end, split.files.size()));
        last_line = now;
      }
    }
    writer.finish();
  }
  write_pack_index(out_dir, index);

  report.train = static_cast<int64_t>(index.train.size());
  report.val = static_cast<int64_t>(index.val.size());
  report.shards = static_cast<int64_t>(index.shards.size());
  for (const auto& s : index.shards) report.bytes += s.bytes;
  return report;
}

}  // namespace batchlab::data
