// The rules of a target (a metric and the value to reach), defined once for train.target (the
// trainer's milestones and stop_at_target) and for a scaling study's [study] target (its race and
// its steps to target): what value a target may have, and when a measurement reaches it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace batchlab::config {

// The rule a target's value breaks, nullopt when it keeps it: an accuracy in (0, 1], a loss a
// finite number >= 0.
std::optional<std::string> target_value_rule(std::string_view metric, double value);

// Whether `measured` reaches `target` on `metric`: accuracies from below (>=), losses from above
// (<=).
bool reaches_target(std::string_view metric, double measured, double target);

}  // namespace batchlab::config
