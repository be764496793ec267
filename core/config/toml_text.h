// TOML nodes as diagnostics show them: the value as text, its type name and its position.
#pragma once

#include <toml++/toml.h>

#include <string>

namespace batchlab::config {

// "an integer", "a float", "a string", "a boolean", "an array", "a table", "a date", ...
std::string node_type_name(const toml::node& node);

// The value of a node as TOML text, for the `key = value` part of a diagnostic. toml++ keeps no
// raw source text, so numbers appear normalized (0.10 shows as 0.1).
std::string render_node(const toml::node& node);

// Where a node starts in its source; line 0 for nodes built in code rather than parsed.
struct SourcePosition {
  int line = 0;
  int column = 0;
};
SourcePosition position_of(const toml::node& node);
SourcePosition position_of(const toml::key& key);

}  // namespace batchlab::config
