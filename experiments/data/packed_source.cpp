#include "experiments/data/packed_source.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "core/errors.h"

namespace batchlab::data {
namespace {

// Raw samples are the resampler's input as they are; only their geometry is needed from the index.
class RawPackedReader : public ImageReader {
 public:
  explicit RawPackedReader(const PackedImageSource& source) : source_(source) {}
  JpegHeader open(Split split, int64_t index) override {
    const PackedSample& s = source_.sample(split, index);
    const uint8_t* bytes = source_.sample_bytes(split, index);
    if (static_cast<uint64_t>(s.length) != uint64_t{s.width} * s.height * 3) {
      throw DataError(fmt::format("{}: raw sample of {}x{} pixels has {} bytes, not {}",
                                  source_.location(split, index), s.width, s.height, s.length,
                                  uint64_t{s.width} * s.height * 3));
    }
    view_ = {bytes, s.width, s.height, int64_t{s.width} * 3};
    return {s.width, s.height};
  }
  ImageView pixels(const CropBox&, int64_t, int64_t) override { return view_; }

 private:
  const PackedImageSource& source_;
  ImageView view_;
};

// JPEG samples are decoded from the mapped bytes, with DCT scaling like image-folder files.
class JpegPackedReader : public ImageReader {
 public:
  explicit JpegPackedReader(const PackedImageSource& source) : source_(source) {}
  JpegHeader open(Split split, int64_t index) override {
    const PackedSample& s = source_.sample(split, index);
    bytes_ = source_.sample_bytes(split, index);
    length_ = s.length;
    name_ = source_.location(split, index);
    return decoder_.read_header(bytes_, length_, name_);
  }
  ImageView pixels(const CropBox& box, int64_t out_w, int64_t out_h) override {
    return decoder_.decode(bytes_, length_, choose_dct_scale(box.width, box.height, out_w, out_h),
                           name_);
  }

 private:
  const PackedImageSource& source_;
  JpegDecoder decoder_;
  const uint8_t* bytes_ = nullptr;
  size_t length_ = 0;
  std::string name_;
};

}  // namespace

PackedImageSource::PackedImageSource(const std::string& dir, bool skip_corrupt)
    : dir_(dir), index_(read_pack_index(dir)) {
  for (const auto& entry : index_.shards) {
    auto shard = std::make_unique<Shard>();
    shard->path = (std::filesystem::path(dir) / entry.file).string();
    const int fd = ::open(shard->path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0) {
      shard->open_problem =
          fmt::format("{}: shard listed in the pack index cannot be opened", shard->path);
    } else if (static_cast<uint64_t>(st.st_size) != entry.bytes) {
      shard->open_problem = fmt::format(
          "{}: shard is {} ({} bytes, the index says {}); re-run `batchlab data pack`", shard->path,
          static_cast<uint64_t>(st.st_size) < entry.bytes ? "truncated" : "too long", st.st_size,
          entry.bytes);
    } else if (entry.bytes > 0) {
      void* p = ::mmap(nullptr, entry.bytes, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        shard->open_problem = fmt::format("{}: cannot memory-map the shard", shard->path);
      } else {
        shard->data = static_cast<const uint8_t*>(p);
        shard->mapped = entry.bytes;
      }
    }
    if (fd >= 0) ::close(fd);
    const std::string problem = shard->open_problem;
    shards_.push_back(std::move(shard));
    if (!problem.empty() && !skip_corrupt) {
      unmap_all();  // the destructor does not run for a constructor that throws
      throw DataError(problem);
    }
  }
}

PackedImageSource::~PackedImageSource() { unmap_all(); }

void PackedImageSource::unmap_all() {
  for (auto& s : shards_) {
    if (s->data) ::munmap(const_cast<uint8_t*>(s->data), s->mapped);
    s->data = nullptr;
  }
}

const std::vector<PackedSample>& PackedImageSource::samples(Split split) const {
  // The pack's "val" is the test split; Split::val (held out of training) is hold_out_validation's.
  static const std::vector<PackedSample> kNone;
  if (split == Split::val) return kNone;
  return split == Split::train ? index_.train : index_.val;
}

int64_t PackedImageSource::size(Split split) const {
  return static_cast<int64_t>(samples(split).size());
}

const PackedSample& PackedImageSource::sample(Split split, int64_t index) const {
  return samples(split).at(static_cast<size_t>(index));
}

int64_t PackedImageSource::label(Split split, int64_t index) const {
  return sample(split, index).label;
}

std::string PackedImageSource::location(Split split, int64_t index) const {
  const PackedSample& s = sample(split, index);
  return fmt::format("{} (bytes {}..{}, {} sample {})", shards_[s.shard]->path, s.offset,
                     s.offset + s.length, split == Split::train ? "train" : "val", index);
}

std::string PackedImageSource::description() const {
  return fmt::format(
      "packed shards {} ({} training and {} validation {} samples at {} px, {} "
      "shards, {} classes)",
      dir_, index_.train.size(), index_.val.size(), to_string(index_.format), index_.size,
      index_.shards.size(), index_.classes.size());
}

void PackedImageSource::verify(Shard& shard, const PackedShard& entry) const {
  const uint32_t crc = crc32_of(shard.data, shard.mapped);
  if (crc != entry.crc32) {
    shard.checksum_problem = fmt::format(
        "{}: shard checksum mismatch (CRC-32 {:08x}, the index says {:08x}); the file is damaged, "
        "re-run `batchlab data pack`",
        shard.path, crc, entry.crc32);
  }
}

const uint8_t* PackedImageSource::sample_bytes(Split split, int64_t index) const {
  const PackedSample& s = sample(split, index);
  Shard& shard = *shards_[s.shard];
  if (!shard.open_problem.empty()) throw DataError(shard.open_problem);
  std::call_once(shard.verified, [&] { verify(shard, index_.shards[s.shard]); });
  if (!shard.checksum_problem.empty()) throw DataError(shard.checksum_problem);
  return shard.data + s.offset;
}

std::vector<std::string> PackedImageSource::shard_problems() const {
  std::vector<std::string> out;
  for (const auto& s : shards_) {
    if (!s->open_problem.empty()) out.push_back(s->open_problem);
  }
  return out;
}

std::unique_ptr<ImageReader> PackedImageSource::make_reader() const {
  if (index_.format == PackFormat::raw) return std::make_unique<RawPackedReader>(*this);
  return std::make_unique<JpegPackedReader>(*this);
}

}  // namespace batchlab::data
