// Which weights of a run count as its best, for best.pt (core/train/checkpoint.h) and
// `batchlab export --checkpoint best`. Selection reads held-out validation metrics only (test
// metrics are reported, never selected on), so best weights exist only for runs with a validation
// split (data.val_size > 0).
//
// The rule: the metric of the first train.target when that is a validation metric (val_acc, or
// val_loss), else val_loss. Accuracy is better higher, loss lower; only a strict improvement
// replaces best.pt, so the earliest evaluation with the best value is the one kept.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/config/train_config.h"
#include "core/train/reporter.h"

namespace batchlab::train {

class BestWeightsRule {
 public:
  explicit BestWeightsRule(const std::vector<config::Target>& targets);

  const std::string& metric() const { return metric_; }

  // The evaluation's value of the metric when it improves on `best` (any measured value improves
  // on none); nullopt when it does not, or when the evaluation did not measure it.
  std::optional<double> improvement(const EvalRecord& r, std::optional<double> best) const;

 private:
  std::string metric_;
  bool higher_is_better_ = false;
};

}  // namespace batchlab::train
