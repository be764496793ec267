// An in-memory image classification dataset (train and test split) and the dispatcher that builds
// one from the [data] section of an experiment. Every dataset here fits in memory as uint8
// (Fashion-MNIST is 55 MB), so tasks index it directly instead of streaming from disk.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config/data_config.h"

namespace batchlab::data {

// The synthetic dataset's training images when data.train_size = 0: small enough that a test
// trains on it in seconds, large enough that accuracy is measured to about 1% (1024 test images).
inline constexpr int64_t kSyntheticTrainSize = 4096;

struct ImageDataset {
  torch::Tensor train_images;  // uint8 [N, C, H, W], pixel values 0..255
  torch::Tensor train_labels;  // int64 [N], values in [0, num_classes)
  torch::Tensor test_images;   // uint8 [M, C, H, W]
  torch::Tensor test_labels;   // int64 [M]
  int64_t num_classes = 0;
  std::vector<std::string> class_names;  // num_classes entries
  std::string name;                      // "fashion_mnist", "cifar10", "synthetic" (data.dataset)
  std::string source;  // where it was read from: a directory, or the generator's seed
  // Examples of the training split a task holds out for validation (data.val_size; which ones:
  // core/train/validation_split.h). The images stay in train_images.
  int64_t val_size = 0;
  // Per-channel mean and standard deviation of pixel/255 over the whole training split, before any
  // data.train_size limit and with the validation examples (so neither changes the
  // normalization). C entries.
  std::vector<double> mean;
  std::vector<double> stddev;

  int64_t channels() const { return train_images.size(1); }
  int64_t height() const { return train_images.size(2); }
  int64_t width() const { return train_images.size(3); }
};

// Names accepted by data.dataset for image tasks, in a stable order.
std::vector<std::string> image_dataset_names();

// Builds the dataset named by data.dataset:
//   fashion_mnist: read from data.path ("" = /usr/share/datasets/fashion-mnist, package
//                  dataset-fashion-mnist);
//   cifar10:       the binary distribution in data.path (cifar10.h; no default location);
//   synthetic:     generated (make_synthetic_images) with a fixed seed, so every run of every sweep
//   sees
//                  the same images, like a real dataset; data.path is ignored.
// data.train_size / data.test_size keep the first N samples of each split (0 = all; synthetic
// generates 4096 / 1024 by default). data.val_size is recorded for the task (see val_size). Throws
// InputError for an unknown dataset (listing the valid names) or a size that is negative or larger
// than the split; DataError for unreadable files.
ImageDataset load_image_dataset(const config::DataConfig& data);

// The examples a task trains on from the dataset data.dataset names (data.train_size of the
// training split, less the data.val_size held out), told without loading the data: from the
// synthetic dataset's size, Fashion-MNIST's label header, CIFAR-10's file sizes. nullopt for the
// datasets only loading can measure (imagenet, text) and where loading will fail (missing files,
// a size beyond the split: load_image_dataset and the task then say why).
std::optional<int64_t> image_training_examples(const config::DataConfig& data);

// Its two parts, for callers that ask for many configs of one dataset (`sweep plan` caches the
// split per folder): the whole training split data.dataset names (nullopt as above), and the
// examples trained on out of a split of `split` (nullopt: data.train_size beyond it, or a
// data.val_size that leaves nothing to train on).
std::optional<int64_t> image_split_size(const config::DataConfig& data);
std::optional<int64_t> training_examples_of_split(int64_t split, const config::DataConfig& data);

// Per-channel mean and standard deviation of pixel/255 over uint8 images [N, C, H, W]; computed in
// double precision. Used to fill ImageDataset::mean / stddev.
void compute_channel_stats(const torch::Tensor& images, std::vector<double>& mean,
                           std::vector<double>& stddev);

// uint8 [B, C, H, W] -> float [B, C, H, W] as (x/255 - mean[c]) / stddev[c]: the input models
// expect.
torch::Tensor normalize_images(const torch::Tensor& images, const ImageDataset& dataset);

}  // namespace batchlab::data
