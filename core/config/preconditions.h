// What components assert about the config sections they receive. User input is validated once, in
// core/config (validation.h); a component (the optimizer factory, the LR schedule) then runs the
// same schema rules again as an assertion rather than keeping rules of its own that could drift.
// A config that fails here skipped validation: a bug in the caller (a config built in code and
// never passed through parse_experiment / validate_experiment), reported as an internal
// batchlab::Error (exit 1), not as bad input.
#pragma once

#include <string_view>

#include "core/config/optim_config.h"
#include "core/config/schedule_config.h"

namespace batchlab::config {

// The section's field rules and the cross-key rules within it. `component` names the caller in
// the message ("make_optimizer").
void expect_valid(const OptimConfig& optim, std::string_view component);
void expect_valid(const ScheduleConfig& schedule, std::string_view component);

// A precondition that is not a config rule (e.g. a derived value such as the peak LR); throws the
// same internal error with `what` when `ok` is false.
void expect(bool ok, std::string_view component, std::string_view what);
[[noreturn]] void internal_error(std::string_view component, std::string_view what);

}  // namespace batchlab::config
