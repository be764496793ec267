#include "experiments/tasks/task_factory.h"

#include "experiments/data/image_dataset.h"
#include "experiments/tasks/image_classification.h"
#include "models/registry.h"

namespace batchlab::experiments {

std::unique_ptr<train::Task> make_task(const config::ModelConfig& model,
                                       const config::DataConfig& data,
                                       const config::BatchConfig& batch,
                                       const config::TrainConfig& train) {
  auto dataset = data::load_image_dataset(data);
  const int64_t classes = model.num_classes > 0 ? model.num_classes : dataset.num_classes;
  auto net = models::make_image_classifier(model, dataset.train_images.size(1),
                                           dataset.train_images.size(2),
                                           dataset.train_images.size(3), classes, batch.bn_group);
  return std::make_unique<ImageClassificationTask>(std::move(dataset), std::move(net),
                                                   data.augment, torch::Device(train.device));
}

std::vector<std::string> dataset_names() { return data::image_dataset_names(); }

}  // namespace batchlab::experiments
