#include "experiments/tasks/task_factory.h"

#include "experiments/data/image_dataset.h"
#include "experiments/tasks/causal_lm_task.h"
#include "experiments/tasks/file_image_classification.h"
#include "experiments/tasks/image_classification.h"
#include "experiments/tasks/initial_weights.h"
#include "experiments/tasks/masked_lm_task.h"
#include "models/registry.h"

namespace batchlab::experiments {

namespace {

std::unique_ptr<train::Task> make_task_for_data(const config::ModelConfig& model,
                                                const config::DataConfig& data, int64_t bn_group,
                                                torch::Device device) {
  // Streamed from files (JPEG folder or packed shards); the other image datasets fit in memory.
  if (data.dataset == "imagenet") return make_file_image_task(model, data, bn_group, device);
  // Language modelling on packed token shards: next-token prediction for a causal LM (the GPT-2
  // family, experiments/tasks/causal_lm_task.h), masked-LM pretraining for the BERT family
  // (experiments/tasks/masked_lm_task.h).
  if (data.dataset == "text") {
    if (models::is_causal_lm_arch(model.arch)) return make_causal_lm_task(model, data, device);
    return make_masked_lm_task(model, data, device);
  }
  auto dataset = data::load_image_dataset(data);
  const int64_t classes = model.num_classes > 0 ? model.num_classes : dataset.num_classes;
  auto net = models::make_image_classifier(model, dataset.train_images.size(1),
                                           dataset.train_images.size(2),
                                           dataset.train_images.size(3), classes, bn_group);
  return std::make_unique<ImageClassificationTask>(std::move(dataset), std::move(net), data.augment,
                                                   device, model.channels_last);
}

}  // namespace

std::unique_ptr<train::Task> make_task(const config::ModelConfig& model,
                                       const config::DataConfig& data, int64_t bn_group,
                                       torch::Device device, std::vector<std::string>* notes) {
  auto task = make_task_for_data(model, data, bn_group, device);
  std::vector<std::string> said = load_initial_weights(task->model(), model);
  if (notes != nullptr) notes->insert(notes->end(), said.begin(), said.end());
  return task;
}

std::vector<std::string> dataset_names() {
  auto names = data::image_dataset_names();
  names.push_back("imagenet");
  names.push_back("text");
  return names;
}

void add_registry_names(config::LoadOptions& options) {
  for (const auto& m : models::list_models()) {
    options.model_archs.push_back(m.name);
    if (m.family != "image") options.text_archs.push_back(m.name);  // masked and causal LMs
  }
  options.datasets = dataset_names();
  options.text_datasets = {"text"};  // make_task_for_data: the one text data set
}

void add_data_sizes(config::LoadOptions& options) {
  options.training_examples = data::image_training_examples;
}

}  // namespace batchlab::experiments
