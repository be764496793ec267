#include "experiments/data/image_folder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "core/errors.h"

namespace batchlab::data {
namespace fs = std::filesystem;
namespace {

std::vector<std::string> sorted_subdirectories(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && !name.empty() && name[0] != '.') names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The JPEG files of each class folder of `dir`, in (label, file name) order.
ImageFolderSplit scan_split(const fs::path& dir, const std::vector<std::string>& classes) {
  ImageFolderSplit split;
  for (size_t label = 0; label < classes.size(); ++label) {
    const fs::path class_dir = dir / classes[label];
    if (!fs::is_directory(class_dir)) continue;
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(class_dir)) {
      const std::string name = entry.path().filename().string();
      if (entry.is_regular_file() && name[0] != '.' && is_jpeg_name(name)) names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    for (const auto& name : names) {
      split.files.push_back((class_dir / name).string());
      split.labels.push_back(static_cast<int64_t>(label));
    }
  }
  return split;
}

class FolderReader : public ImageReader {
 public:
  explicit FolderReader(const FolderImageSource& source) : source_(source) {}

  JpegHeader open(Split split, int64_t index) override {
    path_ = source_.location(split, index);
    read_file_bytes(path_, bytes_);
    return decoder_.read_header(bytes_.data(), bytes_.size(), path_);
  }

  ImageView pixels(const CropBox& box, int64_t out_w, int64_t out_h) override {
    const DctScale scale = choose_dct_scale(box.width, box.height, out_w, out_h);
    return decoder_.decode(bytes_.data(), bytes_.size(), scale, path_);
  }

 private:
  const FolderImageSource& source_;
  JpegDecoder decoder_;
  std::vector<uint8_t> bytes_;
  std::string path_;
};

}  // namespace

bool is_jpeg_name(const std::string& filename) {
  const auto dot = filename.rfind('.');
  if (dot == std::string::npos) return false;
  std::string ext = filename.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext == "jpeg" || ext == "jpg";
}

ImageFolderIndex scan_image_folder(const std::string& root) {
  const fs::path train_dir = fs::path(root) / "train";
  const fs::path val_dir = fs::path(root) / "val";
  if (!fs::is_directory(train_dir)) {
    throw InputError(fmt::format(
        "{}: no train/ folder; an image folder dataset is ROOT/train/<class>/*.JPEG and "
        "ROOT/val/<class>/*.JPEG (or a directory written by `batchlab data pack`)",
        root));
  }
  ImageFolderIndex index;
  index.root = root;
  index.classes = sorted_subdirectories(train_dir);
  if (index.classes.empty()) {
    throw InputError(
        fmt::format("{}: no class folders (train/<class>/*.JPEG)", train_dir.string()));
  }
  index.train = scan_split(train_dir, index.classes);
  if (index.train.files.empty()) {
    throw InputError(fmt::format("{}: no .JPEG/.jpg files in its {} class folders",
                                 train_dir.string(), index.classes.size()));
  }
  if (fs::is_directory(val_dir)) {
    for (const auto& name : sorted_subdirectories(val_dir)) {
      if (!std::binary_search(index.classes.begin(), index.classes.end(), name)) {
        throw InputError(fmt::format(
            "{}: class folder '{}' does not exist in train/, so it has no label; the val/ classes "
            "must be a subset of the train/ classes",
            val_dir.string(), name));
      }
    }
    index.val = scan_split(val_dir, index.classes);
  }
  return index;
}

FolderImageSource::FolderImageSource(ImageFolderIndex index) : index_(std::move(index)) {}

int64_t FolderImageSource::size(Split split) const {
  return static_cast<int64_t>(split_of(split).files.size());
}

int64_t FolderImageSource::label(Split split, int64_t index) const {
  return split_of(split).labels.at(static_cast<size_t>(index));
}

std::string FolderImageSource::location(Split split, int64_t index) const {
  return split_of(split).files.at(static_cast<size_t>(index));
}

std::string FolderImageSource::description() const {
  return fmt::format("image folder {} ({} training and {} validation JPEGs, {} classes)",
                     index_.root, index_.train.files.size(), index_.val.files.size(),
                     index_.classes.size());
}

std::unique_ptr<ImageReader> FolderImageSource::make_reader() const {
  return std::make_unique<FolderReader>(*this);
}

}  // namespace batchlab::data
