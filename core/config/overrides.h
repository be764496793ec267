// Command-line overrides (`--set key.path=value`), applied to the parsed document before it is
// read, so an override goes through exactly the same type checks and rules as the file's value
// and changes the canonical TOML (and so the run id) the same way.
#pragma once

#include <toml++/toml.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/read_context.h"

namespace batchlab::config {

struct ParsedOverride {
  std::string text;    // as given, quoted back in diagnostics
  std::string path;    // "optim.base_lr"
  toml::table holder;  // the value, under the key "value" (toml::node is abstract, so it is boxed)
  // Non-empty when the value is a number out of TOML's range (1e400, 2^63): why it cannot be
  // used (apply_overrides reports it; `holder` then holds the text as a string).
  std::string out_of_range;

  const toml::node& value() const { return *holder.get("value"); }
};

// Splits at the first '=' and parses the right side as a TOML value (1e-3, true, "s", [1, 2],
// { metric = "test_acc", value = 0.9 }); a right side that is not a valid TOML value is taken as
// a string, so `optim.name=lars` and `schedule.budget=2h` need no quotes. nullopt with `error` set
// when there is no '=' or no key.
std::optional<ParsedOverride> parse_override(std::string_view text, std::string& error);

// Applies each override in order (a later one wins) to `document`, recording in `ctx` which paths
// come from --set. An override of one key of an exclusive group (core/config/exclusive_keys.h)
// replaces the document's other keys of that group (not those set by the overrides themselves).
// Malformed overrides and unknown keys become diagnostics in `ctx` with file
// `--set`, and are not applied.
void apply_overrides(toml::table& document, const std::vector<std::string>& overrides,
                     ReadContext& ctx);

}  // namespace batchlab::config
