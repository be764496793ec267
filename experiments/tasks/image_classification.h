// Image classification: an ImageClassifier on an in-memory ImageDataset with cross-entropy loss and
// top-1 accuracy. Images stay uint8 in memory; a batch is gathered, optionally augmented (random
// crop from a 2-pixel zero padding and horizontal flip, one vectorized gather for the whole batch),
// converted to float and normalized with the training set's per-channel mean and std.
// dataset.val_size examples of the training images form Split::val (core/train/validation_split.h)
// and are never trained on; validation and test batches are never augmented.
#pragma once

#include <memory>

#include "core/train/task.h"
#include "core/train/validation_split.h"
#include "experiments/data/image_dataset.h"
#include "models/network.h"

namespace batchlab::experiments {

class ImageClassificationTask : public train::Task {
 public:
  // On a CUDA device, `channels_last` (model.channels_last) puts the model's 4-d weights and the
  // input batches in NHWC, and batches travel from pinned host memory without blocking the host.
  // Throws InputError when dataset.val_size does not leave training examples.
  ImageClassificationTask(data::ImageDataset dataset,
                          std::shared_ptr<models::ImageClassifier> model, bool augment,
                          torch::Device device, bool channels_last = false);

  torch::nn::Module& model() override { return *model_; }
  int64_t size(train::Split split) const override;
  train::Batch make_batch(train::Split split, const torch::Tensor& indices,
                          std::optional<uint64_t> augment_seed) override;
  train::BatchOutput forward(const train::Batch& batch) override;
  bool fixed_input_shapes() const override { return true; }  // S x S crops, fixed batches
  std::optional<double> chance_accuracy() const override {
    if (dataset_.num_classes < 1) return std::nullopt;
    return 1.0 / static_cast<double>(dataset_.num_classes);
  }

  const data::ImageDataset& dataset() const { return dataset_; }
  const train::ValidationSplit& validation_split() const { return validation_; }

 private:
  data::ImageDataset dataset_;
  train::ValidationSplit validation_;
  std::shared_ptr<models::ImageClassifier> model_;
  bool augment_;
  torch::Device device_;
  bool channels_last_ = false;  // only ever true on CUDA
  torch::Tensor mean_;          // float [1, C, 1, 1]
  torch::Tensor std_;           // float [1, C, 1, 1]
};

// uint8 [n, C, H, W] -> uint8 [n, C, H, W]: each image shifted by a random offset in
// [-pad, pad]^2 (zero fill) and flipped horizontally with probability 1/2, drawn from `seed`.
torch::Tensor random_crop_flip(const torch::Tensor& images, int64_t pad, uint64_t seed);

}  // namespace batchlab::experiments
