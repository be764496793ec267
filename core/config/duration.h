// Wall-clock durations as written in configs (`schedule.budget = "1h30m"`).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace batchlab::config {

// Result of parsing a duration: seconds when well formed, otherwise the reason it is not.
struct ParsedDuration {
  std::optional<double> seconds;
  std::string error;
};

// Accepts one or more `<number><unit>` parts with units h, m, s in that order, each at most once,
// and decimal numbers: "2h", "90m", "45s", "1h30m", "1.5h", "1h0m30s". Zero is well formed (the
// positivity rule is a separate validation so the user gets the more specific message).
ParsedDuration parse_duration(std::string_view text);

// Canonical spelling: whole seconds when exact, otherwise the shortest decimal that reads back to
// the same double ("5400s", "0.25s"); parse_duration(format_duration(s)) == s for every finite s >=
// 0.
std::string format_duration(double seconds);

}  // namespace batchlab::config
