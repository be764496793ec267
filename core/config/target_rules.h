// The rule of a target's value (core/config/target.h: a metric and the value to reach), defined
// once for train.target (the trainer's milestones and stop_at_target) and for a scaling study's
// [study] target (its race and its steps to target). When a measurement reaches a target is the
// target's own (Target::reached_by).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace batchlab::config {

// The rule a target's value breaks, nullopt when it keeps it: an accuracy in (0, 1], a loss a
// finite number >= 0.
std::optional<std::string> target_value_rule(std::string_view metric, double value);

}  // namespace batchlab::config
