#include "models/registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <functional>

#include "core/errors.h"
#include "models/small_resnet.h"

namespace batchlab::models {
namespace {

// What a factory is built for: one input sample's shape and the number of outputs.
struct InputSpec {
  int64_t channels = 0;
  int64_t height = 0;
  int64_t width = 0;
  int64_t num_classes = 0;
  int64_t bn_group = 0;  // not an input property, but physical-batch settings reach the model here
};

// One row of the models table. `forward_macs` works from shapes alone so that `batchlab models` can
// price ResNet-152 without allocating it.
struct Entry {
  ModelInfo info;
  std::function<std::shared_ptr<ImageClassifier>(const config::ModelConfig&, const InputSpec&)>
      make;
  std::function<int64_t(const config::ModelConfig&, const InputSpec&)> forward_macs;
};

SmallResNetOptions small_resnet_options(const config::ModelConfig& m, const InputSpec& in) {
  SmallResNetOptions o;
  o.in_channels = in.channels;
  o.num_classes = in.num_classes;
  o.width = m.width;
  o.zero_init_residual = m.zero_init_residual;
  o.bn_group = in.bn_group;
  return o;
}

// The table. To add an architecture, add an entry here (and its files under models/).
const std::vector<Entry>& table() {
  static const std::vector<Entry> entries = {
      {{"small_resnet",
        "residual CNN for small images (Fashion-MNIST): thin 3x3 stem, 2 BasicBlocks at 1/2 "
        "resolution (model.width channels, default 32) and 2 at 1/4 (2 x width)",
        /*channels=*/1, /*height=*/28, /*width=*/28, /*num_classes=*/10},
       [](const config::ModelConfig& m, const InputSpec& in) -> std::shared_ptr<ImageClassifier> {
         return std::make_shared<SmallResNet>(small_resnet_options(m, in));
       },
       [](const config::ModelConfig& m, const InputSpec& in) {
         return SmallResNet::forward_macs(small_resnet_options(m, in), in.height, in.width);
       }},
  };
  return entries;
}

// Looks up model.arch and checks the sizes; the error lists every valid name.
const Entry& find_entry(const config::ModelConfig& model, InputSpec& in) {
  const Entry* found = nullptr;
  for (const Entry& e : table()) {
    if (e.info.name == model.arch) found = &e;
  }
  if (found == nullptr) {
    std::vector<std::string> names;
    for (const Entry& e : table()) names.push_back(e.info.name);
    throw InputError(fmt::format("model.arch = \"{}\": unknown architecture; valid: {}", model.arch,
                                 fmt::join(names, ", ")));
  }
  if (in.channels < 1 || in.height < 1 || in.width < 1 || in.num_classes < 1) {
    throw InputError(
        fmt::format("model.arch = \"{}\": input {}x{}x{} with {} classes: every size must be >= 1",
                    model.arch, in.channels, in.height, in.width, in.num_classes));
  }
  if (model.num_classes != 0 && model.num_classes != in.num_classes) {
    throw InputError(fmt::format(
        "model.num_classes = {}: the dataset has {} classes (0 = take it from the dataset)",
        model.num_classes, in.num_classes));
  }
  return *found;
}

}  // namespace

std::vector<ModelInfo> list_models() {
  std::vector<ModelInfo> out;
  for (const Entry& e : table()) out.push_back(e.info);
  return out;
}

std::shared_ptr<ImageClassifier> make_image_classifier(const config::ModelConfig& model,
                                                       int64_t channels, int64_t height,
                                                       int64_t width, int64_t num_classes,
                                                       int64_t bn_group) {
  InputSpec in{channels, height, width, num_classes, bn_group};
  return find_entry(model, in).make(model, in);
}

int64_t count_parameters(const torch::nn::Module& module) {
  int64_t n = 0;
  for (const auto& p : module.parameters(/*recurse=*/true)) n += p.numel();
  return n;
}

ModelCost estimate_cost(const config::ModelConfig& model, int64_t channels, int64_t height,
                        int64_t width, int64_t num_classes) {
  InputSpec in{channels, height, width, num_classes};
  ModelCost cost;
  cost.forward_macs = find_entry(model, in).forward_macs(model, in);
  cost.forward_flops = 2 * cost.forward_macs;
  cost.training_flops = 3 * cost.forward_flops;
  return cost;
}

int64_t training_flops_per_sample(const config::ModelConfig& model, int64_t channels,
                                  int64_t height, int64_t width, int64_t num_classes) {
  return estimate_cost(model, channels, height, width, num_classes).training_flops;
}

}  // namespace batchlab::models
