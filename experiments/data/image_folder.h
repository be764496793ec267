// ImageNet's folder layout: ROOT/train/<class>/*.JPEG and ROOT/val/<class>/*.JPEG. Classes are the
// sorted folder names under train/ (label = position in that order, as torchvision's ImageFolder),
// files are sorted by name, so the sample order is the same on every machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "experiments/data/image_source.h"

namespace batchlab::data {

struct ImageFolderSplit {
  std::vector<std::string> files;  // full paths
  std::vector<int64_t> labels;     // same length, values in [0, classes)
};

struct ImageFolderIndex {
  std::string root;
  std::vector<std::string> classes;  // sorted folder names (e.g. WordNet ids)
  ImageFolderSplit train;
  ImageFolderSplit val;  // empty when ROOT/val does not exist
};

// True for the extensions read as JPEG: .jpeg, .jpg (any case).
bool is_jpeg_name(const std::string& filename);

// Scans ROOT. Throws InputError when ROOT/train is missing or holds no class folder with images,
// or when val/ has a class folder that train/ does not (labels would disagree).
ImageFolderIndex scan_image_folder(const std::string& root);

class FolderImageSource : public ImageSource {
 public:
  explicit FolderImageSource(ImageFolderIndex index);

  int64_t size(Split split) const override;
  int64_t label(Split split, int64_t index) const override;
  std::string location(Split split, int64_t index) const override;
  const std::vector<std::string>& class_names() const override { return index_.classes; }
  std::string description() const override;
  std::unique_ptr<ImageReader> make_reader() const override;

  const ImageFolderIndex& index() const { return index_; }

 private:
  // ROOT/val is the test split; Split::val (held out of train/) is hold_out_validation's.
  const ImageFolderSplit& split_of(Split split) const {
    static const ImageFolderSplit kNone;
    if (split == Split::val) return kNone;
    return split == Split::train ? index_.train : index_.val;
  }
  ImageFolderIndex index_;
};

}  // namespace batchlab::data
