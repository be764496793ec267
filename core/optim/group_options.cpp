#include "core/optim/group_options.h"

#include <fmt/format.h>

#include "core/config/preconditions.h"

namespace batchlab::optim {

void keep_group_options(torch::optim::Optimizer& opt,
                        const std::vector<torch::optim::OptimizerParamGroup>& intended) {
  auto& groups = opt.param_groups();
  config::expect(groups.size() == intended.size(), "keep_group_options",
                 fmt::format("the optimizer has {} parameter groups, {} were given", groups.size(),
                             intended.size()));
  for (size_t i = 0; i < groups.size(); ++i) {
    if (intended[i].has_options()) groups[i].set_options(intended[i].options().clone());
  }
}

}  // namespace batchlab::optim
