#include "core/config/target_rules.h"

#include <cmath>

#include "core/config/schema.h"

namespace batchlab::config {

std::optional<std::string> target_value_rule(std::string_view metric, double value) {
  if (is_accuracy_metric(metric)) {
    if (value > 0.0 && value <= 1.0) return std::nullopt;
    return "an accuracy target must be in (0, 1]: a fraction, e.g. 0.9 for 90%";
  }
  if (std::isfinite(value) && value >= 0.0) return std::nullopt;
  return "a loss target must be a finite number >= 0";
}

}  // namespace batchlab::config
