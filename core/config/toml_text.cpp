#include "core/config/toml_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <sstream>

#include "core/config/canonical.h"
#include "core/config/toml_depth.h"
#include "core/errors.h"

namespace batchlab::config {

namespace {

std::string_view trim(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

// Line `number` (1-based) of `text`.
std::string_view line_of(std::string_view text, size_t number) {
  size_t start = 0;
  for (size_t n = 1; n < number; ++n) {
    start = text.find('\n', start);
    if (start == std::string_view::npos) return {};
    ++start;
  }
  const size_t end = text.find('\n', start);
  return text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
}

// `"optim.base_lr"` -> optim.base_lr; bare keys stay as they are.
std::string unquoted(std::string_view key) {
  key = trim(key);
  if (key.size() >= 2 && (key.front() == '"' || key.front() == '\'') && key.back() == key.front()) {
    key = key.substr(1, key.size() - 2);
  }
  return std::string(key);
}

// The key an out-of-range number on line `number` belongs to: the text before its `=`, under the
// nearest table header above it ([optim] base_lr -> optim.base_lr).
std::string key_at(std::string_view text, size_t number) {
  const std::string_view line = line_of(text, number);
  const size_t equals = line.find('=');
  if (equals == std::string_view::npos) return "";
  std::string key = unquoted(line.substr(0, equals));
  for (size_t n = number; n-- > 1;) {
    const std::string_view header = trim(line_of(text, n));
    if (header.empty() || header.front() != '[') continue;
    const size_t open = header.find_first_not_of('[');
    const size_t close = header.find(']', open);
    if (open == std::string_view::npos || close == std::string_view::npos) break;
    return unquoted(header.substr(open, close - open)) + "." + key;
  }
  return key;
}

}  // namespace

std::optional<std::string> number_range_rule(const toml::parse_error& e) {
  const std::string_view description = e.description();
  const bool out_of_range =
      description.find("not representable in 64 bits") != std::string_view::npos ||
      (description.find("floating-point") != std::string_view::npos &&
       description.find("could not be interpreted as a value") != std::string_view::npos);
  if (!out_of_range) return std::nullopt;
  if (description.find("floating-point") != std::string_view::npos) {
    return std::string(
        "out of range for a float: a 64-bit float is finite only up to about 1.8e308 in "
        "magnitude; write a finite number");
  }
  return std::string(
      "out of range for an integer: a 64-bit integer lies in [-9223372036854775808, "
      "9223372036854775807]; write a smaller number");
}

std::optional<std::string> number_range_token(const toml::parse_error& e) {
  const std::string_view description = e.description();
  const size_t open = description.find('\'');
  const size_t close = open == std::string_view::npos ? open : description.find('\'', open + 1);
  if (close == std::string_view::npos) return std::nullopt;
  return std::string(description.substr(open + 1, close - open - 1));
}

toml::table parse_toml(std::string_view text, const std::string& source_name) {
  // Before toml++ sees it: a deep enough document overflows the stack inside toml::parse
  // (core/config/toml_depth.h).
  if (const TomlDepth nesting = toml_depth(text); nesting.depth > kMaxTomlDepth) {
    Diagnostic d;
    d.file = source_name;
    d.line = nesting.line;
    d.column = nesting.column;
    d.rule = fmt::format(
        "nested more than {} levels deep (dotted keys, table headers, inline arrays and tables "
        "together); batchlab refuses such files, which only a damaged or hostile file has: real "
        "configs are 3 or 4 levels deep. Write the keys out as [table] sections",
        kMaxTomlDepth);
    throw ConfigError({d});
  }
  try {
    return toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    Diagnostic d;
    d.file = source_name;
    d.line = static_cast<int>(e.source().begin.line);
    d.column = static_cast<int>(e.source().begin.column);
    d.rule = "TOML syntax error: " + std::string(e.description());
    if (auto rule = number_range_rule(e)) {
      // A number the parser cannot hold: say so about the key, at the number's own column (the
      // parser points past its end), rather than as a syntax error.
      const auto token = number_range_token(e).value_or("");
      const std::string_view line = line_of(text, static_cast<size_t>(d.line));
      size_t at = token.empty() ? std::string_view::npos
                                : line.rfind(token, static_cast<size_t>(std::max(d.column - 1, 0)));
      if (at != std::string_view::npos) {
        size_t length = token.size();
        if (at > 0 && (line[at - 1] == '-' || line[at - 1] == '+')) {
          --at;  // the sign belongs to the number
          ++length;
        }
        d.column = static_cast<int>(at) + 1;
        d.value = std::string(line.substr(at, length));
      }
      d.key = key_at(text, static_cast<size_t>(d.line));
      if (d.key.empty()) d.value.clear();
      d.rule = *rule;
    }
    throw ConfigError({d});
  }
}

std::string node_type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

std::string render_node(const toml::node& node) {
  if (const auto* v = node.as_integer()) return format_integer(v->get());
  if (const auto* v = node.as_floating_point()) return format_float(v->get());
  if (const auto* v = node.as_string()) return format_string(v->get());
  if (const auto* v = node.as_boolean()) return v->get() ? "true" : "false";
  if (const auto* array = node.as_array()) {
    std::string out = "[";
    for (size_t i = 0; i < array->size(); ++i) {
      if (i > 0) out += ", ";
      out += render_node(*array->get(i));
    }
    return out + "]";
  }
  if (const auto* table = node.as_table()) {
    if (table->empty()) return "{}";
    std::string out = "{ ";
    bool first = true;
    for (auto&& [key, value] : *table) {
      if (!first) out += ", ";
      first = false;
      out += std::string(key.str()) + " = " + render_node(value);
    }
    return out + " }";
  }
  // Dates and times: toml++'s own printer already writes them in TOML form.
  std::ostringstream stream;
  node.visit([&stream](const auto& concrete) { stream << concrete; });
  return stream.str();
}

SourcePosition position_of(const toml::node& node) {
  const auto& begin = node.source().begin;
  return {static_cast<int>(begin.line), static_cast<int>(begin.column)};
}

SourcePosition position_of(const toml::key& key) {
  const auto& begin = key.source().begin;
  return {static_cast<int>(begin.line), static_cast<int>(begin.column)};
}

}  // namespace batchlab::config
