#include "experiments/data/image_dataset.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "core/config/preconditions.h"
#include "core/errors.h"
#include "experiments/data/cifar10.h"
#include "experiments/data/fashion_mnist.h"
#include "experiments/data/synthetic_images.h"

namespace batchlab::data {
namespace {

constexpr int64_t kSyntheticTestSize = 1024;
// The synthetic dataset is fixed, like a real one: seeds in a sweep vary initialization and data
// order (data.seed), never the data itself.
constexpr int64_t kSyntheticSeed = 0;

// The schema requires >= 0 (core/config); a negative size here skipped validation.
void check_size(const std::string& key, int64_t value) {
  config::expect(value >= 0, "load_image_dataset", fmt::format("{} = {} must be >= 0", key, value));
}

// Keeps the first `limit` samples of a split (0 = all). Cloned so that the full split's memory is
// released rather than kept alive by a view.
void limit_split(torch::Tensor& images, torch::Tensor& labels, int64_t limit,
                 const std::string& key, const std::string& split, const std::string& dataset) {
  if (limit == 0 || limit == images.size(0)) return;
  if (limit > images.size(0)) {
    throw InputError(fmt::format("{} = {}: larger than the {} {} images of {} (0 = all)", key,
                                 limit, images.size(0), split, dataset));
  }
  images = images.narrow(0, 0, limit).clone();
  labels = labels.narrow(0, 0, limit).clone();
}

}  // namespace

std::vector<std::string> image_dataset_names() { return {"cifar10", "fashion_mnist", "synthetic"}; }

ImageDataset load_image_dataset(const config::DataConfig& data) {
  check_size("data.train_size", data.train_size);
  check_size("data.test_size", data.test_size);

  if (data.dataset == "synthetic") {
    SyntheticImageOptions shape;
    if (data.synthetic_channels > 0) shape.channels = data.synthetic_channels;
    if (data.synthetic_size > 0) shape.height = shape.width = data.synthetic_size;
    if (data.synthetic_classes > 0) shape.num_classes = data.synthetic_classes;
    ImageDataset ds = make_synthetic_images(
        data.train_size > 0 ? data.train_size : kSyntheticTrainSize,
        data.test_size > 0 ? data.test_size : kSyntheticTestSize, kSyntheticSeed, shape);
    ds.val_size = data.val_size;
    return ds;
  }
  if (data.dataset == "fashion_mnist" || data.dataset == "cifar10") {
    ImageDataset ds =
        data.dataset == "cifar10" ? load_cifar10(data.path) : load_fashion_mnist(data.path);
    limit_split(ds.train_images, ds.train_labels, data.train_size, "data.train_size", "training",
                ds.name);
    limit_split(ds.test_images, ds.test_labels, data.test_size, "data.test_size", "test", ds.name);
    ds.val_size = data.val_size;
    return ds;
  }
  throw InputError(fmt::format("data.dataset = \"{}\": unknown image dataset; valid: {}",
                               data.dataset, fmt::join(image_dataset_names(), ", ")));
}

std::optional<int64_t> image_split_size(const config::DataConfig& data) {
  if (data.dataset == "synthetic") {
    return data.train_size > 0 ? data.train_size : kSyntheticTrainSize;
  }
  if (data.dataset == "fashion_mnist") return fashion_mnist_train_count(data.path);
  if (data.dataset == "cifar10") return cifar10_train_count(data.path);
  return std::nullopt;
}

std::optional<int64_t> training_examples_of_split(int64_t split, const config::DataConfig& data) {
  if (data.train_size > split || data.train_size < 0) return std::nullopt;
  const int64_t kept = data.train_size > 0 ? data.train_size : split;
  if (data.val_size < 0 || data.val_size >= kept) return std::nullopt;
  return kept - data.val_size;
}

std::optional<int64_t> image_training_examples(const config::DataConfig& data) {
  const auto split = image_split_size(data);
  if (!split) return std::nullopt;
  return training_examples_of_split(*split, data);
}

void compute_channel_stats(const torch::Tensor& images, std::vector<double>& mean,
                           std::vector<double>& stddev) {
  if (images.dim() != 4 || images.scalar_type() != torch::kUInt8) {
    throw Error(fmt::format("compute_channel_stats: expected uint8 [N, C, H, W], got {} [{}]",
                            c10::toString(images.scalar_type()), fmt::join(images.sizes(), ", ")));
  }
  const torch::Tensor x = images.contiguous();
  const int64_t n = x.size(0);
  const int64_t c = x.size(1);
  const int64_t plane = x.size(2) * x.size(3);
  mean.assign(static_cast<size_t>(c), 0.0);
  stddev.assign(static_cast<size_t>(c), 1.0);
  if (n == 0 || plane == 0) return;

  // Integer sums are exact (255^2 x 47M pixels < 2^63) and far cheaper than a float copy of the
  // data.
  const uint8_t* p = x.data_ptr<uint8_t>();
  for (int64_t ch = 0; ch < c; ++ch) {
    int64_t sum = 0;
    int64_t sum_sq = 0;
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t* q = p + (i * c + ch) * plane;
      for (int64_t j = 0; j < plane; ++j) {
        sum += q[j];
        sum_sq += int64_t{q[j]} * q[j];
      }
    }
    const double count = static_cast<double>(n * plane);
    const double m = static_cast<double>(sum) / count;
    const double var = std::max(static_cast<double>(sum_sq) / count - m * m, 0.0);
    mean[static_cast<size_t>(ch)] = m / 255.0;
    // A constant channel would divide by zero; leave it unscaled.
    stddev[static_cast<size_t>(ch)] = var > 0 ? std::sqrt(var) / 255.0 : 1.0;
  }
}

torch::Tensor normalize_images(const torch::Tensor& images, const ImageDataset& dataset) {
  if (images.dim() != 4 || static_cast<int64_t>(dataset.mean.size()) != images.size(1) ||
      dataset.stddev.size() != dataset.mean.size()) {
    throw Error(fmt::format(
        "normalize_images: images [{}] do not match the {} channels of the dataset's statistics",
        fmt::join(images.sizes(), ", "), dataset.mean.size()));
  }
  const int64_t c = images.size(1);
  const auto opts = torch::TensorOptions().dtype(torch::kDouble);
  // [C] -> [1, C, 1, 1] so they broadcast over [B, C, H, W].
  const torch::Tensor mean = torch::tensor(dataset.mean, opts).to(torch::kFloat).view({1, c, 1, 1});
  const torch::Tensor stddev =
      torch::tensor(dataset.stddev, opts).to(torch::kFloat).view({1, c, 1, 1});
  return images.to(torch::kFloat).div_(255.0f).sub_(mean).div_(stddev);
}

}  // namespace batchlab::data
