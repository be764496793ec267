// Keeping each parameter group's own options when an optimizer is built.
//
// From LibTorch 2.10 on (pytorch/pytorch#161825, the fix of #141884), Optimizer::add_param_group
// merges a group's options with the optimizer's defaults: a field whose value equals the value the
// options type's constructor gives it (weight_decay = 0, momentum = 0, ...) counts as "not set by
// the user" and is replaced by the optimizer's default. C++ cannot tell "left at 0" from "set to
// 0", and batchlab sets every field of every group on purpose: its no-decay group (biases and
// norms, optim.exclude) exists to have weight_decay = 0 while the default group decays. Without
// this, every excluded parameter silently got the decay (caught by the golden LARS/LAMB
// trajectories and the factory tests). So after an optimizer is constructed, each group gets back
// the exact options it was given. Earlier versions kept them anyway; this is a no-op there.
#pragma once

#include <torch/optim/optimizer.h>

#include <vector>

namespace batchlab::optim {

// Sets the options of opt.param_groups()[i] to a copy of intended[i]'s, for every group that was
// given options (a group built without options keeps the defaults it got). The groups must be
// the ones opt was built from, in order (checked: a mismatch is a programming error).
void keep_group_options(torch::optim::Optimizer& opt,
                        const std::vector<torch::optim::OptimizerParamGroup>& intended);

}  // namespace batchlab::optim
