#include "core/train/targets.h"

#include "core/config/schema.h"

namespace batchlab::train {

std::optional<double> metric_value(const std::string& metric, const EvalRecord& r) {
  if (metric == "val_acc") return r.val_acc;
  if (metric == "val_loss") return r.val_loss;
  if (metric == "test_acc") return r.test_acc;
  if (metric == "test_loss") return r.test_loss;
  if (metric == "train_acc") return r.train_acc;
  if (metric == "train_loss") return r.train_loss;
  return std::nullopt;  // unknown metrics are rejected by config validation
}

bool target_met(const config::Target& target, const EvalRecord& r) {
  const auto value = metric_value(target.metric, r);
  if (!value) return false;
  return target.reached_by(*value);
}

}  // namespace batchlab::train
