#include "experiments/data/fashion_mnist.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>

#include "core/errors.h"
#include "experiments/data/idx_reader.h"

namespace batchlab::data {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kNumClasses = 10;

std::string install_hint() {
  return fmt::format(
      "install the Debian package dataset-fashion-mnist (scripts/setup.sh installs it) or set "
      "data.path to a directory holding {}, {}, {} and {}",
      kFashionMnistTrainImages, kFashionMnistTrainLabels, kFashionMnistTestImages,
      kFashionMnistTestLabels);
}

// The path of one of the four files: the .gz name, or the same name uncompressed (what a manual
// download followed by gunzip leaves behind).
std::string resolve_file(const fs::path& dir, const std::string& gz_name) {
  const fs::path gz = dir / gz_name;
  std::error_code ec;
  if (fs::exists(gz, ec)) return gz.string();
  const fs::path plain = dir / gz_name.substr(0, gz_name.size() - 3);  // drop ".gz"
  if (fs::exists(plain, ec)) return plain.string();
  throw DataError(fmt::format("Fashion-MNIST: {} not found (nor {}); {}", gz.string(),
                              plain.filename().string(), install_hint()));
}

// Checks one split: as many labels as images, every label in 0..9.
void check_split(const torch::Tensor& images, const torch::Tensor& labels,
                 const std::string& images_path, const std::string& labels_path) {
  if (images.size(0) != labels.size(0)) {
    throw DataError(fmt::format(
        "Fashion-MNIST: {} holds {} images but {} holds {} labels; the files belong to different "
        "datasets or one is damaged (re-download or reinstall them)",
        images_path, images.size(0), labels_path, labels.size(0)));
  }
  if (labels.numel() == 0) return;
  const torch::Tensor bad = (labels < 0).logical_or(labels >= kNumClasses).nonzero();
  if (bad.size(0) > 0) {
    const int64_t index = bad[0][0].item<int64_t>();
    throw DataError(fmt::format(
        "Fashion-MNIST: {}: label {} at index {} is outside 0..{} ({} bad labels); the file is not "
        "a Fashion-MNIST label file or is damaged",
        labels_path, labels[index].item<int64_t>(), index, kNumClasses - 1, bad.size(0)));
  }
}

}  // namespace

const std::vector<std::string>& fashion_mnist_class_names() {
  static const std::vector<std::string> names = {"T-shirt/top", "Trouser",   "Pullover", "Dress",
                                                 "Coat",        "Sandal",    "Shirt",    "Sneaker",
                                                 "Bag",         "Ankle boot"};
  return names;
}

std::optional<int64_t> fashion_mnist_train_count(const std::string& dir) {
  const fs::path root = dir.empty() ? fs::path(kFashionMnistDefaultDir) : fs::path(dir);
  const std::string gz_name = kFashionMnistTrainLabels;
  if (auto n = read_idx_count((root / gz_name).string())) return n;
  return read_idx_count((root / gz_name.substr(0, gz_name.size() - 3)).string());
}

ImageDataset load_fashion_mnist(const std::string& dir) {
  const fs::path root = dir.empty() ? fs::path(kFashionMnistDefaultDir) : fs::path(dir);
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    throw DataError(
        fmt::format("Fashion-MNIST: directory {} not found; {}", root.string(), install_hint()));
  }

  const std::string train_images_path = resolve_file(root, kFashionMnistTrainImages);
  const std::string train_labels_path = resolve_file(root, kFashionMnistTrainLabels);
  const std::string test_images_path = resolve_file(root, kFashionMnistTestImages);
  const std::string test_labels_path = resolve_file(root, kFashionMnistTestLabels);

  ImageDataset ds;
  ds.train_images = read_idx_images(train_images_path);  // uint8 [60000, 1, 28, 28]
  ds.train_labels = read_idx_labels(train_labels_path);  // int64 [60000]
  ds.test_images = read_idx_images(test_images_path);    // uint8 [10000, 1, 28, 28]
  ds.test_labels = read_idx_labels(test_labels_path);    // int64 [10000]

  check_split(ds.train_images, ds.train_labels, train_images_path, train_labels_path);
  check_split(ds.test_images, ds.test_labels, test_images_path, test_labels_path);
  if (ds.train_images.sizes().slice(1) != ds.test_images.sizes().slice(1)) {
    throw DataError(fmt::format(
        "Fashion-MNIST: training images are [{}] but test images are [{}] per sample; {} and {} "
        "come from different datasets",
        fmt::join(ds.train_images.sizes().slice(1), ", "),
        fmt::join(ds.test_images.sizes().slice(1), ", "), train_images_path, test_images_path));
  }

  ds.num_classes = kNumClasses;
  ds.class_names = fashion_mnist_class_names();
  ds.name = "fashion_mnist";
  ds.source = root.string();
  compute_channel_stats(ds.train_images, ds.mean, ds.stddev);
  return ds;
}

}  // namespace batchlab::data
