#include "experiments/data/image_source.h"

#include <fmt/format.h>

#include <cmath>

#include "core/config/preconditions.h"
#include "core/errors.h"
#include "core/train/validation_split.h"
#include "experiments/data/image_folder.h"
#include "experiments/data/packed_source.h"

namespace batchlab::data {
namespace {

// A view of another source whose samples are samples of the inner one: (split, index) here is
// inner_sample(split, index) there. The views below only say how to map and how many there are.
class RemappedSource : public ImageSource {
 public:
  explicit RemappedSource(std::shared_ptr<const ImageSource> inner) : inner_(std::move(inner)) {}

  int64_t label(Split split, int64_t index) const override {
    const auto [s, i] = inner_sample(split, index);
    return inner_->label(s, i);
  }
  std::string location(Split split, int64_t index) const override {
    const auto [s, i] = inner_sample(split, index);
    return inner_->location(s, i);
  }
  const std::vector<std::string>& class_names() const override { return inner_->class_names(); }
  std::unique_ptr<ImageReader> make_reader() const override {
    return std::make_unique<Reader>(*this, inner_->make_reader());
  }

 protected:
  virtual std::pair<Split, int64_t> inner_sample(Split split, int64_t index) const = 0;
  const ImageSource& inner() const { return *inner_; }

 private:
  class Reader : public ImageReader {
   public:
    Reader(const RemappedSource& owner, std::unique_ptr<ImageReader> inner)
        : owner_(owner), inner_(std::move(inner)) {}
    JpegHeader open(Split split, int64_t index) override {
      const auto [s, i] = owner_.inner_sample(split, index);
      return inner_->open(s, i);
    }
    ImageView pixels(const CropBox& box, int64_t out_w, int64_t out_h) override {
      return inner_->pixels(box, out_w, out_h);
    }

   private:
    const RemappedSource& owner_;
    std::unique_ptr<ImageReader> inner_;
  };

  std::shared_ptr<const ImageSource> inner_;
};

// An evenly spread subset of each split (data.train_size / data.test_size).
class SubsetSource : public RemappedSource {
 public:
  SubsetSource(std::shared_ptr<const ImageSource> inner, std::vector<int64_t> train,
               std::vector<int64_t> test)
      : RemappedSource(std::move(inner)), train_(std::move(train)), test_(std::move(test)) {}

  int64_t size(Split split) const override {
    return split == Split::val ? 0 : static_cast<int64_t>(map(split).size());
  }
  std::string description() const override {
    return fmt::format("{}, limited to {} training and {} test images", inner().description(),
                       train_.size(), test_.size());
  }

 private:
  const std::vector<int64_t>& map(Split split) const {
    return split == Split::train ? train_ : test_;
  }
  std::pair<Split, int64_t> inner_sample(Split split, int64_t index) const override {
    if (split == Split::val)
      throw Error(fmt::format("validation image {} of a source holding none", index));
    return {split, map(split).at(static_cast<size_t>(index))};
  }

  std::vector<int64_t> train_;
  std::vector<int64_t> test_;
};

// The training split with data.val_size images held out as Split::val (the mapping:
// core/train/validation_split.h).
class ValidationSource : public RemappedSource {
 public:
  ValidationSource(std::shared_ptr<const ImageSource> inner, int64_t val_size)
      : RemappedSource(inner), split_(inner->size(Split::train), val_size, inner->description()) {}

  int64_t size(Split split) const override {
    return split == Split::test ? inner().size(Split::test) : split_.size(split);
  }
  std::string description() const override {
    return fmt::format("{}, {} training images held out for validation", inner().description(),
                       split_.size(Split::val));
  }

 private:
  std::pair<Split, int64_t> inner_sample(Split split, int64_t index) const override {
    return {train::ValidationSplit::stored_split(split), split_.to_stored(split, index)};
  }

  train::ValidationSplit split_;
};

std::vector<int64_t> spread_subset(int64_t n, int64_t count, const std::string& key,
                                   const std::string& split) {
  // The schema requires >= 0 (core/config); a negative count here skipped validation.
  config::expect(count >= 0, "spread_subset", fmt::format("{} = {} must be >= 0", key, count));
  if (count > n) {
    throw InputError(
        fmt::format("{} = {}: larger than the {} {} images (0 = all)", key, count, n, split));
  }
  std::vector<int64_t> out(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    // floor(i * n / count): strictly increasing, first 0, last < n.
    out[static_cast<size_t>(i)] =
        static_cast<int64_t>((static_cast<unsigned __int128>(i) * static_cast<uint64_t>(n)) /
                             static_cast<uint64_t>(count));
  }
  return out;
}

}  // namespace

void load_sample(ImageReader& reader, Split split, int64_t index, const TransformSpec& spec,
                 std::optional<uint64_t> seed, uint8_t* out, ResampleScratch& scratch) {
  const JpegHeader full = reader.open(split, index);
  const SampleTransform t = seed ? random_transform(full.width, full.height, spec, *seed)
                                 : eval_transform(full.width, full.height, spec);
  const ImageView view = reader.pixels(t.box, spec.image_size, spec.image_size);
  // The box in the (possibly DCT-reduced) decoded image's pixels.
  const double sx = static_cast<double>(view.width) / static_cast<double>(full.width);
  const double sy = static_cast<double>(view.height) / static_cast<double>(full.height);
  const CropBox box{t.box.x * sx, t.box.y * sy, t.box.width * sx, t.box.height * sy};
  resample_crop(view, box, spec.image_size, spec.image_size, t.flip, PixelLayout::chw, out,
                scratch);
}

std::shared_ptr<const ImageSource> limit_image_source(std::shared_ptr<const ImageSource> source,
                                                      int64_t train_size, int64_t test_size) {
  const int64_t n_train = source->size(Split::train), n_test = source->size(Split::test);
  const int64_t keep_train = train_size == 0 ? n_train : train_size;
  const int64_t keep_test = test_size == 0 ? n_test : test_size;
  auto train = spread_subset(n_train, keep_train, "data.train_size", "training");
  auto test = spread_subset(n_test, keep_test, "data.test_size", "test");
  if (keep_train == n_train && keep_test == n_test) return source;
  return std::make_shared<SubsetSource>(std::move(source), std::move(train), std::move(test));
}

std::shared_ptr<const ImageSource> hold_out_validation(std::shared_ptr<const ImageSource> source,
                                                       int64_t val_size) {
  if (val_size == 0) return source;
  return std::make_shared<ValidationSource>(std::move(source), val_size);
}

std::shared_ptr<const ImageSource> open_image_source(const config::DataConfig& data) {
  if (data.path.empty()) {
    throw InputError(fmt::format(
        "data.path is empty: data.dataset = \"{}\" reads an ImageNet-style folder "
        "(train/<class>/*.JPEG, val/<class>/*.JPEG) or a directory written by `batchlab data pack`",
        data.dataset));
  }
  std::shared_ptr<const ImageSource> source;
  if (is_packed_dataset(data.path)) {
    source = std::make_shared<PackedImageSource>(data.path, data.skip_corrupt);
  } else {
    source = std::make_shared<FolderImageSource>(scan_image_folder(data.path));
  }
  return hold_out_validation(limit_image_source(std::move(source), data.train_size, data.test_size),
                             data.val_size);
}

}  // namespace batchlab::data
