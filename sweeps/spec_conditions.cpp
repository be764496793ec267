// The parts of a spec that refer to swept keys: [set], [[exclude]] and the when-clauses, read
// once every dimension is known.
#include <fmt/format.h>

#include <algorithm>

#include "core/config/overrides.h"
#include "core/config/suggest.h"
#include "core/config/toml_text.h"
#include "sweeps/spec_reader.h"

namespace batchlab::sweeps {

namespace {

std::string trim(std::string_view s) {
  const size_t first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const size_t last = s.find_last_not_of(" \t");
  return std::string(s.substr(first, last - first + 1));
}

}  // namespace

std::vector<std::string> split_conditions(std::string_view text) {
  std::vector<std::string> parts;
  int depth = 0;
  char quote = 0;
  std::string current;
  for (char c : text) {
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if (c == ']' || c == '}') {
      --depth;
    } else if (c == ',' && depth == 0) {
      parts.push_back(trim(current));
      current.clear();
      continue;
    }
    current += c;
  }
  parts.push_back(trim(current));
  return parts;
}

std::optional<Setting> SpecReader::read_setting(const FlatEntry& entry, const std::string& where) {
  if (auto it = swept_.find(entry.key); it != swept_.end()) {
    error(entry.where, where + " " + entry.key, config::render_node(*entry.node),
          fmt::format("is swept by {} (line {}); a fixed value cannot override a swept key "
                      "(use [[exclude]] to drop combinations)",
                      it->second.second, it->second.first.line));
    return std::nullopt;
  }
  return Setting{entry.key, value_of(*entry.node)};
}

std::vector<std::string> SpecReader::swept_keys() const {
  std::vector<std::string> keys;
  for (const auto& [key, at] : swept_) keys.push_back(key);
  return keys;
}

// A match names a swept key and one of its values; anything else could never (or would always)
// match, which is a mistake worth reporting.
std::optional<Match> SpecReader::read_match(const std::string& key, const toml::node& value,
                                            Location at, const std::string& where,
                                            const SweepSpec& spec) {
  const Axis* axis = nullptr;
  for (const auto& dim : spec.dimensions) {
    for (const auto& a : dim.axes) {
      if (a.key == key) axis = &a;
    }
  }
  if (axis == nullptr) {
    std::string rule;
    if (swept_.count(key) > 0) {
      return std::nullopt;  // swept, but its dimension was rejected: already reported
    } else if (!unknown_experiment_key_rule(key)) {
      rule = "is not swept; " + where +
             " matches swept keys: " + config::join_choices(swept_keys(), " and ");
    } else if (auto close = config::closest_match(key, swept_keys())) {
      rule = fmt::format("unknown key, did you mean {}?", *close);
    } else {
      rule = *unknown_experiment_key_rule(key);
    }
    error(at, where + " " + key, config::render_node(value), rule);
    return std::nullopt;
  }
  for (const auto& v : axis->values) {
    if (same_value(*v.node, value)) return Match{key, SpecValue{&value, display_text(value), at}};
  }
  std::vector<std::string> values;
  for (const auto& v : axis->values) values.push_back(v.text);
  error(at, where + " " + key, config::render_node(value),
        "matches none of the swept values (" + config::join_choices(values, " and ") + ")");
  return std::nullopt;
}

void SpecReader::read_excludes(const toml::table& doc, SweepSpec& spec) {
  const toml::node* node = doc.get("exclude");
  if (node == nullptr) return;
  const auto* array = node->as_array();
  if (array == nullptr || !array->is_array_of_tables()) {
    error(location_of(*node), "exclude", config::render_node(*node),
          "must be tables: write each exclusion under [[exclude]]");
    return;
  }
  for (const auto& element : *array) {
    const auto& table = *element.as_table();
    Exclude ex;
    ex.where = location_of(table);
    bool ok = !table.empty();
    if (!ok) error(ex.where, "exclude", "", "empty [[exclude]] would drop every job");
    for (const auto& entry : flatten_keys(table)) {
      auto m = read_match(entry.key, *entry.node, entry.where, "[[exclude]]", spec);
      ok = ok && m.has_value();
      if (m) ex.match.push_back(std::move(*m));
    }
    if (ok) spec.excludes.push_back(std::move(ex));
  }
}

std::optional<std::vector<Match>> SpecReader::read_conditions(const std::string& condition,
                                                              Location where,
                                                              const std::string& path,
                                                              const std::string& example,
                                                              const SweepSpec& spec) {
  std::vector<Match> matches;
  bool ok = true;
  for (const auto& part : split_conditions(condition)) {
    std::string problem;
    auto parsed = config::parse_override(part, problem);
    if (!parsed || part.find('=') == std::string::npos) {
      error(where, path, "",
            fmt::format("condition `{}` is not key=value (e.g. {}; join several with ',')", part,
                        example));
      ok = false;
      continue;
    }
    storage_->holders.push_back(std::move(parsed->holder));
    const toml::node& value = *storage_->holders.back().get("value");
    auto m = read_match(parsed->path, value, where, path, spec);
    ok = ok && m.has_value();
    if (m) matches.push_back(std::move(*m));
  }
  if (!ok) return std::nullopt;
  return matches;
}

void SpecReader::read_whens(const toml::table& doc, SweepSpec& spec) {
  const toml::table* whens = table_at(doc, "when");
  if (whens == nullptr) return;
  for (auto&& [key, node] : *whens) {
    When when;
    when.condition = std::string(key.str());
    when.where = location_of(key);
    const std::string where = fmt::format("[when.\"{}\"]", when.condition);
    auto conditions =
        read_conditions(when.condition, when.where, where, "[when.\"optim.name=lars\"]", spec);
    const bool ok = conditions.has_value();
    if (conditions) when.conditions = std::move(*conditions);
    const auto* body = node.as_table();
    if (body == nullptr) {
      error(location_of(node), where, config::render_node(node),
            "must be a table of overrides, e.g. [when.\"optim.name=lars\"] "
            "\"optim.base_lr\" = 2.0");
      continue;
    }
    if (body->empty()) error(when.where, where, "", "has no overrides");
    for (const auto& entry : flatten(*body, where)) {
      if (auto setting = read_setting(entry, where)) when.settings.push_back(*setting);
    }
    if (ok && !body->empty()) spec.whens.push_back(std::move(when));
  }
  std::stable_sort(spec.whens.begin(), spec.whens.end(),
                   [](const When& a, const When& b) { return before(a.where, b.where); });
}

}  // namespace batchlab::sweeps
