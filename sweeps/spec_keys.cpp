#include "sweeps/spec_keys.h"

#include <algorithm>

#include "core/config/schema.h"
#include "core/config/suggest.h"
#include "core/config/toml_text.h"

namespace batchlab::sweeps {

namespace {

Location key_location(const toml::key& key) {
  const auto p = config::position_of(key);
  return {p.line, p.column};
}

}  // namespace

std::vector<FlatEntry> flatten_keys(const toml::table& table) {
  std::vector<FlatEntry> out;
  for (auto&& [key, node] : table) {
    const std::string name(key.str());
    const auto* nested = node.as_table();
    if (name.find('.') == std::string::npos && nested != nullptr &&
        config::find_section(name) != nullptr) {
      for (auto&& [inner_key, inner] : *nested) {
        out.push_back({name + "." + std::string(inner_key.str()), &inner, key_location(inner_key)});
      }
    } else {
      out.push_back({name, &node, key_location(key)});
    }
  }
  return out;
}

std::optional<std::string> unknown_experiment_key_rule(const std::string& path) {
  const auto& known = config::known_key_paths();
  if (std::binary_search(known.begin(), known.end(), path)) return std::nullopt;
  const size_t dot = path.find('.');
  if (dot == std::string::npos && config::find_section(path) != nullptr) {
    return "name one key at a time, as " + path + ".<key>";
  }
  if (dot != std::string::npos && path.find('.', dot + 1) == std::string::npos) {
    if (const auto* section = config::find_section(path.substr(0, dot))) {
      return config::unknown_key_rule(section->name, path.substr(dot + 1), section->keys, known);
    }
  }
  if (auto close = config::closest_match(path, known))
    return "unknown key, did you mean " + *close + "?";
  return "unknown key; experiment keys are section.key, e.g. optim.base_lr";
}

std::string display_text(const toml::node& node) {
  if (const auto* s = node.as_string()) return s->get();
  return config::render_node(node);
}

}  // namespace batchlab::sweeps
