#include "experiments/tasks/task_factory.h"

#include "experiments/data/image_dataset.h"
#include "experiments/tasks/file_image_classification.h"
#include "experiments/tasks/image_classification.h"
#include "experiments/tasks/masked_lm_task.h"
#include "models/registry.h"

namespace batchlab::experiments {

std::unique_ptr<train::Task> make_task(const config::ModelConfig& model,
                                       const config::DataConfig& data,
                                       const config::BatchConfig& batch,
                                       const config::TrainConfig& train) {
  // Streamed from files (JPEG folder or packed shards); the other image datasets fit in memory.
  if (data.dataset == "imagenet") return make_file_image_task(model, data, batch, train);
  // BERT pretraining on packed token shards (experiments/tasks/masked_lm_task.h).
  if (data.dataset == "text") return make_masked_lm_task(model, data, train);
  auto dataset = data::load_image_dataset(data);
  const int64_t classes = model.num_classes > 0 ? model.num_classes : dataset.num_classes;
  auto net = models::make_image_classifier(model, dataset.train_images.size(1),
                                           dataset.train_images.size(2),
                                           dataset.train_images.size(3), classes, batch.bn_group);
  return std::make_unique<ImageClassificationTask>(std::move(dataset), std::move(net), data.augment,
                                                   torch::Device(train.device),
                                                   model.channels_last);
}

std::vector<std::string> dataset_names() {
  auto names = data::image_dataset_names();
  names.push_back("imagenet");
  names.push_back("text");
  return names;
}

}  // namespace batchlab::experiments
