// Where the images of a file-backed dataset come from: an ImageNet-style folder of JPEGs
// (image_folder.h) or packed shards written by `batchlab data pack` (packed_source.h). The loader
// and the task see only this interface, so both read through the same transform code.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/config/data_config.h"
#include "core/train/task.h"
#include "experiments/data/image_resample.h"
#include "experiments/data/jpeg_codec.h"
#include "experiments/data/transforms.h"

namespace batchlab::data {

using train::Split;

// Reads one sample at a time; each loader thread owns one (decoder handles and buffers are reused).
class ImageReader {
 public:
  virtual ~ImageReader() = default;
  // Reads sample `index` of `split` far enough to know its size in pixels. Throws DataError naming
  // the file (or shard) when it cannot be read.
  virtual JpegHeader open(Split split, int64_t index) = 0;
  // The opened sample's pixels, possibly reduced (DCT scaling) as far as still leaves `box` (in
  // full-size pixels) at least out_w x out_h. The view stays valid until the next open().
  virtual ImageView pixels(const CropBox& box, int64_t out_w, int64_t out_h) = 0;
};

// A source read from disk holds a training and a test split (size(Split::val) = 0); the view
// hold_out_validation returns adds Split::val.
class ImageSource {
 public:
  virtual ~ImageSource() = default;
  virtual int64_t size(Split split) const = 0;
  virtual int64_t label(Split split, int64_t index) const = 0;
  // The file (or shard and offset) of a sample, for messages.
  virtual std::string location(Split split, int64_t index) const = 0;
  virtual const std::vector<std::string>& class_names() const = 0;
  // One line for logs: kind, path and sizes.
  virtual std::string description() const = 0;
  virtual std::unique_ptr<ImageReader> make_reader() const = 0;
};

// Decodes sample `index` and writes its 3 x S x S transformed pixels (S = spec.image_size) to `out`
// as uint8 planes. With a seed: the training transform drawn from it; without: the eval transform.
void load_sample(ImageReader& reader, Split split, int64_t index, const TransformSpec& spec,
                 std::optional<uint64_t> seed, uint8_t* out, ResampleScratch& scratch);

// Keeps `train_size` / `test_size` samples of each split (0 = all), spread evenly over the split
// (sample round(i * n / size)) so that every class stays represented in a folder sorted by class.
// Throws InputError naming the key when a size is negative or larger than the split.
std::shared_ptr<const ImageSource> limit_image_source(std::shared_ptr<const ImageSource> source,
                                                      int64_t train_size, int64_t test_size);

// A view of `source` whose training split keeps all but `val_size` of its images, the others
// forming Split::val (core/train/validation_split.h; `source` itself when val_size = 0). Throws
// InputError naming data.val_size and the source unless 0 <= val_size < its training images.
std::shared_ptr<const ImageSource> hold_out_validation(std::shared_ptr<const ImageSource> source,
                                                       int64_t val_size);

// The source data.path names: packed shards when it holds a pack index, an image folder
// (train/<class>/*.JPEG, val/<class>/*.JPEG) otherwise; limited to data.train_size/test_size, then
// data.val_size of the remaining training images held out for validation.
// `skip_corrupt` lets a pack with a truncated shard open (its samples are then skipped when read).
std::shared_ptr<const ImageSource> open_image_source(const config::DataConfig& data);

}  // namespace batchlab::data
