#include "core/config/toml_text.h"

#include <sstream>

#include "core/config/canonical.h"
#include "core/errors.h"

namespace batchlab::config {

toml::table parse_toml(std::string_view text, const std::string& source_name) {
  try {
    return toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    Diagnostic d;
    d.file = source_name;
    d.line = static_cast<int>(e.source().begin.line);
    d.column = static_cast<int>(e.source().begin.column);
    d.rule = "TOML syntax error: " + std::string(e.description());
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
