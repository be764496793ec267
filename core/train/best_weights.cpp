#include "core/train/best_weights.h"

#include <cmath>

#include "core/config/schema.h"
#include "core/train/targets.h"

namespace batchlab::train {

BestWeightsRule::BestWeightsRule(const std::vector<config::Target>& targets) : metric_("val_loss") {
  if (!targets.empty() && config::is_validation_metric(targets.front().metric)) {
    metric_ = targets.front().metric;
  }
  higher_is_better_ = config::is_accuracy_metric(metric_);
}

std::optional<double> BestWeightsRule::improvement(const EvalRecord& r,
                                                   std::optional<double> best) const {
  const std::optional<double> value = metric_value(metric_, r);
  if (!value || !std::isfinite(*value)) return std::nullopt;
  if (!best) return value;
  const bool better = higher_is_better_ ? *value > *best : *value < *best;
  return better ? value : std::nullopt;
}

}  // namespace batchlab::train
