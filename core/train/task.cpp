#include "core/train/task.h"

namespace batchlab::train {

std::vector<optim::NamedParameter> Task::named_parameters() {
  std::vector<optim::NamedParameter> out;
  for (const auto& item : model().named_parameters(/*recurse=*/true)) {
    out.push_back({item.key(), item.value()});
  }
  return out;
}

}  // namespace batchlab::train
