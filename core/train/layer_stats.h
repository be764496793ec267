// Per-layer statistics of one update: ||w||, ||g||, ||w||/||g|| (the ratio whose spread across
// layers motivated LARS), the trust ratio the optimizer applied, and ||delta w||. All norms of a
// step are computed on the device with multi-tensor ops (a few kernel launches whatever the number
// of layers) as one stacked tensor and copied to the host once (optim::read_to_host), so the cost
// is a few passes over the parameters on the steps that are logged and nothing on the others.
#pragma once

#include <torch/types.h>

#include <vector>

#include "core/optim/factory.h"
#include "core/train/reporter.h"

namespace batchlab::train {

class LayerStatsCollector {
 public:
  explicit LayerStatsCollector(std::vector<optim::NamedParameter> params);

  // Before the optimizer step: norms of weights and accumulated gradients, and a copy of the
  // weights for the update norm.
  void before_update();

  // After the step: the rows, with `trust_ratios` as returned by TrainingOptimizer (undefined
  // tensors where none was applied).
  std::vector<LayerStatRecord> after_update(int64_t step,
                                            const std::vector<torch::Tensor>& trust_ratios);

 private:
  std::vector<optim::NamedParameter> params_;
  std::vector<torch::Tensor> weights_before_;
  torch::Tensor weight_norms_;  // float64 [P]
  torch::Tensor grad_norms_;    // float64 [P]
};

}  // namespace batchlab::train
