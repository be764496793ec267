// How deep a TOML document nests, measured on its text before toml++ sees it.
//
// Why on the text: toml++ builds one table per segment of a dotted key (`a.a.a... = 1`,
// `[a.a.a...]`) without any limit (its TOML_MAX_NESTED_VALUES bounds only inline arrays and
// tables), and destroys them recursively: a 400 KB config with a 200,000-segment key ends
// toml::parse itself with a stack overflow (exit 139), so no check of the parsed table can come
// first. batchlab's config walkers recurse too. Real experiment and sweep files are 3 or 4 levels
// deep; 128, the bound batchlab uses for JSON (models/bounded_json.h), is far past any of them.
//
// The measure: a table header's segments (one more for `[[array]]`), plus a key's segments, plus
// one per inline array or table a value opens, plus the segments of keys inside inline tables.
// Dots count only where TOML has keys (a statement's start up to `=`, a header, an inline table
// after `{` or `,`), never in values (0.5, 07:32:00.999), strings or comments.
#pragma once

#include <cstddef>
#include <string_view>

namespace batchlab::config {

inline constexpr size_t kMaxTomlDepth = 128;

struct TomlDepth {
  size_t depth = 0;  // the deepest level reached (stops counting once past the bound)
  int line = 0;      // where it was first reached (1-based; 0 for an empty document)
  int column = 0;
};

// The nesting of `text`, scanning stops at the first level past `max_depth`. Text that is no valid
// TOML gets some finite answer; the parser reports what is wrong with it.
TomlDepth toml_depth(std::string_view text, size_t max_depth = kMaxTomlDepth);

}  // namespace batchlab::config
