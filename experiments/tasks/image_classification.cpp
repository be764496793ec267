#include "experiments/tasks/image_classification.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "experiments/tasks/task_outputs.h"
#include "models/memory_format.h"

namespace batchlab::experiments {

ImageClassificationTask::ImageClassificationTask(data::ImageDataset dataset,
                                                 std::shared_ptr<models::ImageClassifier> model,
                                                 bool augment, torch::Device device,
                                                 bool channels_last)
    : dataset_(std::move(dataset)),
      validation_(dataset_.train_labels.size(0), dataset_.val_size, dataset_.name),
      model_(std::move(model)),
      augment_(augment),
      device_(device),
      channels_last_(channels_last && device.is_cuda()) {
  model_->to(device_);
  if (channels_last_) models::to_channels_last(*model_);
  // The dataset's per-channel statistics (whole training split), kept on the device.
  const auto c = static_cast<int64_t>(dataset_.mean.size());
  auto as_tensor = [&](const std::vector<double>& v) {
    return torch::tensor(v, torch::kFloat64).view({1, c, 1, 1}).to(torch::kFloat32).to(device_);
  };
  mean_ = as_tensor(dataset_.mean);
  std_ = as_tensor(dataset_.stddev);
}

int64_t ImageClassificationTask::size(train::Split split) const {
  return split == train::Split::test ? dataset_.test_labels.size(0) : validation_.size(split);
}

torch::Tensor random_crop_flip(const torch::Tensor& images, int64_t pad, uint64_t seed) {
  const int64_t n = images.size(0), c = images.size(1), h = images.size(2), w = images.size(3);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  auto dy = torch::randint(0, 2 * pad + 1, {n, 1, 1}, gen, torch::kInt64);
  auto dx = torch::randint(0, 2 * pad + 1, {n, 1, 1}, gen, torch::kInt64);
  auto flip = torch::randint(0, 2, {n, 1, 1}, gen, torch::kInt64);

  const int64_t hp = h + 2 * pad, wp = w + 2 * pad;
  auto padded = torch::constant_pad_nd(images, {pad, pad, pad, pad}, 0);  // [n, c, hp, wp]
  auto rows = torch::arange(h, torch::kInt64).view({1, h, 1}) + dy;       // [n, h, 1]
  auto cols = torch::arange(w, torch::kInt64).view({1, 1, w});            // [1, 1, w]
  cols = torch::where(flip.to(torch::kBool), (w - 1) - cols, cols) + dx;  // [n, 1, w]
  auto flat = (rows * wp + cols).view({n, 1, h * w}).expand({n, c, h * w});
  return padded.reshape({n, c, hp * wp}).gather(2, flat).view({n, c, h, w});
}

train::Batch ImageClassificationTask::make_batch(train::Split split, const torch::Tensor& indices,
                                                 std::optional<uint64_t> augment_seed) {
  const bool stored_in_train = train::ValidationSplit::stored_split(split) == train::Split::train;
  const auto& images = stored_in_train ? dataset_.train_images : dataset_.test_images;
  const auto& labels = stored_in_train ? dataset_.train_labels : dataset_.test_labels;
  const torch::Tensor stored = validation_.to_stored(split, indices);  // int64 [n]
  auto x = images.index_select(0, stored);                             // uint8 [n, C, H, W]
  if (augment_ && augment_seed && split == train::Split::train) {
    x = random_crop_flip(x, 2, *augment_seed);
  }

  auto y = labels.index_select(0, stored);
  // To a GPU from page-locked memory, without waiting for the copy: the host goes on to queue the
  // forward pass (the caching host allocator keeps the buffers until their copies are done).
  const bool async = device_.is_cuda();
  if (async) {
    x = x.pin_memory();
    y = y.pin_memory();
  }
  const auto on_device = torch::TensorOptions().device(device_);

  train::Batch batch;
  // Normalize on the device: the host sends uint8, a quarter of the float bytes.
  batch.inputs = x.to(on_device, async).to(torch::kFloat32).div_(255.0).sub_(mean_).div_(std_);
  if (channels_last_) batch.inputs = batch.inputs.contiguous(torch::MemoryFormat::ChannelsLast);
  batch.targets = y.to(on_device, async);
  batch.size = indices.size(0);
  return batch;
}

train::BatchOutput ImageClassificationTask::forward(const train::Batch& batch) {
  return classification_output(*model_, batch);
}

}  // namespace batchlab::experiments
