// TOML as diagnostics see it: parsing with syntax errors as diagnostics, and nodes shown as their
// value text, type name and position.
#pragma once

#include <toml++/toml.h>

#include <optional>
#include <string>
#include <string_view>

namespace batchlab::config {

// Parses a TOML document (an experiment, a sweep spec); a syntax error is a ConfigError with one
// diagnostic at the parser's position in `source_name`: "TOML syntax error: ...".
toml::table parse_toml(std::string_view text, const std::string& source_name);

// A number the parser cannot hold (1e400, an integer beyond 64 bits): the rule that says so, about
// the value rather than as a syntax error; nullopt for every other parse error. parse_toml reports
// such a number as `file:line:col: key = value: out of range ...` at the number itself.
std::optional<std::string> number_range_rule(const toml::parse_error& e);
// The number as the parser's message quotes it ("1e400"; without its sign), if it quotes one.
std::optional<std::string> number_range_token(const toml::parse_error& e);

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
