#include "experiments/tasks/file_image_classification.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <cstdio>

#include "core/errors.h"
#include "experiments/tasks/task_outputs.h"
#include "models/memory_format.h"
#include "models/registry.h"

namespace batchlab::experiments {

FileImageClassificationTask::FileImageClassificationTask(
    std::shared_ptr<const data::ImageSource> source, const data::TransformSpec& spec,
    data::LoaderOptions loader, std::shared_ptr<models::ImageClassifier> model,
    torch::Device device, bool channels_last)
    : source_(std::move(source)),
      model_(std::move(model)),
      device_(device),
      channels_last_(channels_last && device.is_cuda()) {
  if (source_->size(train::Split::test) == 0) {
    throw InputError(
        fmt::format("{}: no validation images (val/<class>/*.JPEG); evaluation needs "
                    "a test split",
                    source_->description()));
  }
  loader.pin_memory = device_.is_cuda();
  loader_ = std::make_unique<data::BatchLoader>(source_, spec, loader);
  model_->to(device_);
  if (channels_last_) models::to_channels_last(*model_);
  auto as_tensor = [&](const double(&v)[3]) {
    return torch::tensor({v[0], v[1], v[2]}, torch::kFloat64)
        .view({1, 3, 1, 1})
        .to(torch::kFloat32)
        .to(device_);
  };
  mean_ = as_tensor(kImagenetMean);
  std_ = as_tensor(kImagenetStd);
}

FileImageClassificationTask::~FileImageClassificationTask() {
  if (const int64_t skipped = loader_->skipped_count(); skipped > 0) {
    std::fprintf(stderr,
                 "batchlab: data.skip_corrupt: %lld unreadable image(s) skipped, each "
                 "replaced by the next readable one of its split; first: %s\n",
                 static_cast<long long>(skipped), loader_->skipped_messages().front().c_str());
  }
}

int64_t FileImageClassificationTask::size(train::Split split) const { return source_->size(split); }

torch::Tensor normalize_uint8_images(const torch::Tensor& images, const torch::Tensor& mean,
                                     const torch::Tensor& std) {
  return images.to(torch::kFloat32).div_(255.0).sub_(mean).div_(std);
}

train::Batch FileImageClassificationTask::make_batch(train::Split split,
                                                     const torch::Tensor& indices,
                                                     std::optional<uint64_t> augment_seed) {
  // Only training batches are augmented; validation and test batches take the eval transform.
  const data::ImageBatch b =
      loader_->load(split, indices, split == train::Split::train ? augment_seed : std::nullopt);
  // uint8 crosses to the device (a quarter of the float bytes; from pinned memory without blocking
  // on CUDA); the float conversion and normalization happen there.
  const bool async = device_.is_cuda();
  const auto on_device = torch::TensorOptions().device(device_);
  train::Batch batch;
  batch.inputs = normalize_uint8_images(b.images.to(on_device, async), mean_, std_);
  if (channels_last_) batch.inputs = batch.inputs.contiguous(torch::MemoryFormat::ChannelsLast);
  batch.targets = b.labels.to(on_device, async);
  batch.size = indices.size(0);
  return batch;
}

train::BatchOutput FileImageClassificationTask::forward(const train::Batch& batch) {
  return classification_output(*model_, batch);
}

void FileImageClassificationTask::plan_batches(const train::BatchPlan& plan) {
  loader_->plan(plan);
}

std::unique_ptr<train::Task> make_file_image_task(const config::ModelConfig& model,
                                                  const config::DataConfig& data, int64_t bn_group,
                                                  torch::Device device) {
  auto source = data::open_image_source(data);
  data::TransformSpec spec;
  spec.image_size = data.image_size;
  spec.eval_resize = data.eval_resize;
  spec.min_scale = data.min_scale;
  data::LoaderOptions loader;
  loader.workers = data.workers;
  loader.prefetch = data.prefetch;
  loader.skip_corrupt = data.skip_corrupt;
  loader.augment = data.augment;
  const auto classes = static_cast<int64_t>(source->class_names().size());
  auto net =
      models::make_image_classifier(model, 3, data.image_size, data.image_size, classes, bn_group);
  return std::make_unique<FileImageClassificationTask>(std::move(source), spec, loader,
                                                       std::move(net), device, model.channels_last);
}

}  // namespace batchlab::experiments
