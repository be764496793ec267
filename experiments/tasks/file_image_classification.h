// Image classification streaming from files (data.dataset = "imagenet"): an ImageNet-style JPEG
// folder or packed shards (data/image_source.h), read by a BatchLoader (worker threads, bounded
// prefetch), with torchvision's ImageNet transforms: random-resized-crop + flip for training
// (data.augment), resize + center crop for evaluation. Batches travel to the device as uint8
// [B, 3, S, S] (a quarter of the float bytes) and are normalized there with the ImageNet mean and
// standard deviation.
#pragma once

#include <memory>

#include "core/config/experiment_config.h"
#include "core/train/task.h"
#include "experiments/data/batch_loader.h"
#include "models/network.h"

namespace batchlab::experiments {

// The per-channel statistics torchvision's ImageNet models are trained with (RGB, of pixel / 255).
inline constexpr double kImagenetMean[3] = {0.485, 0.456, 0.406};
inline constexpr double kImagenetStd[3] = {0.229, 0.224, 0.225};

class FileImageClassificationTask : public train::Task {
 public:
  // On a CUDA device the loader fills page-locked batches that are copied without blocking the
  // host, and `channels_last` (model.channels_last) puts weights and inputs in NHWC.
  FileImageClassificationTask(std::shared_ptr<const data::ImageSource> source,
                              const data::TransformSpec& spec, data::LoaderOptions loader,
                              std::shared_ptr<models::ImageClassifier> model, torch::Device device,
                              bool channels_last = false);
  // Prints how many unreadable images were skipped, if any (the run's closing line about its data).
  ~FileImageClassificationTask() override;

  torch::nn::Module& model() override { return *model_; }
  int64_t size(train::Split split) const override;
  train::Batch make_batch(train::Split split, const torch::Tensor& indices,
                          std::optional<uint64_t> augment_seed) override;
  train::BatchOutput forward(const train::Batch& batch) override;
  bool fixed_input_shapes() const override { return true; }  // S x S crops, fixed batches
  void plan_batches(const train::BatchPlan& plan) override;
  std::optional<double> chance_accuracy() const override {
    if (source_->class_names().empty()) return std::nullopt;
    return 1.0 / static_cast<double>(source_->class_names().size());
  }

  data::BatchLoader& loader() { return *loader_; }
  const data::ImageSource& source() const { return *source_; }

 private:
  std::shared_ptr<const data::ImageSource> source_;
  std::unique_ptr<data::BatchLoader> loader_;
  std::shared_ptr<models::ImageClassifier> model_;
  torch::Device device_;
  bool channels_last_ = false;  // only ever true on CUDA
  torch::Tensor mean_;          // float [1, 3, 1, 1] on the device
  torch::Tensor std_;           // float [1, 3, 1, 1]
};

// uint8 [B, 3, H, W] -> float [B, 3, H, W]: (x / 255 - mean) / std, on x's device.
torch::Tensor normalize_uint8_images(const torch::Tensor& images, const torch::Tensor& mean,
                                     const torch::Tensor& std);

// Builds the task data.dataset = "imagenet" asks for: the source data.path names, the loader from
// data.workers / prefetch / skip_corrupt / augment, and model.arch for 3 x image_size inputs.
std::unique_ptr<train::Task> make_file_image_task(const config::ModelConfig& model,
                                                  const config::DataConfig& data, int64_t bn_group,
                                                  torch::Device device);

}  // namespace batchlab::experiments
