#include "core/config/overrides.h"

#include <algorithm>
#include <set>

#include "core/config/exclusive_keys.h"
#include "core/config/schema.h"
#include "core/config/suggest.h"
#include "core/config/toml_depth.h"
#include "core/config/toml_text.h"

namespace batchlab::config {
namespace {

std::string_view trimmed(std::string_view text) {
  const char* kSpace = " \t\r\n";
  const size_t first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  const size_t last = text.find_last_not_of(kSpace);
  return text.substr(first, last - first + 1);
}

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    parts.emplace_back(
        trimmed(path.substr(start, dot == std::string_view::npos ? dot : dot - start)));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts;
}

Diagnostic override_diagnostic(const std::string& key, const std::string& value, std::string rule,
                               const std::string& text) {
  Diagnostic d;
  d.file = std::string(kOverrideFile);
  d.key = key;
  d.value = value;
  d.rule = std::move(rule) + " (from --set '" + text + "')";
  return d;
}

// Why `path` cannot be set, or nullopt when it names a known key.
std::optional<std::string> unknown_path_rule(const std::string& path) {
  const auto& known = known_key_paths();
  if (std::binary_search(known.begin(), known.end(), path)) return std::nullopt;
  const std::vector<std::string> parts = split_path(path);
  if (parts.size() == 1 && find_section(parts[0]) != nullptr) {
    return "set one key at a time, as " + parts[0] + ".<key>=<value>";
  }
  if (parts.size() == 2) {
    if (const Section* section = find_section(parts[0])) {
      return unknown_key_rule(parts[0], parts[1], section->keys, known);
    }
  }
  if (auto close = closest_match(path, known)) return "unknown key, did you mean " + *close + "?";
  return "unknown key; keys are section.key, e.g. optim.base_lr";
}

}  // namespace

std::optional<ParsedOverride> parse_override(std::string_view text, std::string& error) {
  const size_t equals = text.find('=');
  if (equals == std::string_view::npos) {
    error = "malformed override: expected key.path=value (e.g. optim.base_lr=0.1)";
    return std::nullopt;
  }
  ParsedOverride out;
  out.text = std::string(text);
  out.path = std::string(trimmed(text.substr(0, equals)));
  if (out.path.empty()) {
    error = "malformed override: the key before '=' is empty (e.g. optim.base_lr=0.1)";
    return std::nullopt;
  }
  const std::string_view value = trimmed(text.substr(equals + 1));
  // Parsing "value = <text>" as a document gives TOML's reading of the value. Anything else in
  // that document (a newline smuggling in a second key) means it was not a single value.
  const std::string snippet = "value = " + std::string(value);
  // The key path and the value: a hostile depth must not reach toml::parse
  // (core/config/toml_depth.h).
  if (toml_depth(std::string(text) + "\n" + snippet).depth > kMaxTomlDepth) {
    error = "nested more than " + std::to_string(kMaxTomlDepth) +
            " levels deep (dotted key segments, inline arrays and tables); give a key path and "
            "value as a config file would";
    return std::nullopt;
  }
  bool parsed = false;
  try {
    toml::table document = toml::parse(std::string_view(snippet), std::string_view("--set"));
    parsed = document.size() == 1 && document.contains("value");
    if (parsed) out.holder = std::move(document);
  } catch (const toml::parse_error& e) {
    parsed = false;
    // A number TOML cannot hold is a number still, not a string to be reported as the wrong type.
    if (auto rule = number_range_rule(e)) out.out_of_range = *rule;
  }
  if (!parsed) {
    out.holder = toml::table{};
    out.holder.insert_or_assign("value", std::string(value));
  }
  return out;
}

void apply_overrides(toml::table& document, const std::vector<std::string>& overrides,
                     ReadContext& ctx) {
  std::set<std::string> assigned;  // by these overrides: two of one exclusive group conflict
  for (size_t index = 0; index < overrides.size(); ++index) {
    const std::string& text = overrides[index];
    std::string error;
    auto parsed = parse_override(text, error);
    if (!parsed) {
      ctx.add_located(override_diagnostic("", "", error, text), index);
      continue;
    }
    if (auto rule = unknown_path_rule(parsed->path)) {
      ctx.add_located(override_diagnostic(parsed->path, render_node(parsed->value()), *rule, text),
                      index);
      continue;
    }
    if (!parsed->out_of_range.empty()) {
      const std::string value(trimmed(std::string_view(text).substr(text.find('=') + 1)));
      ctx.add_located(override_diagnostic(parsed->path, value, parsed->out_of_range, text), index);
      continue;
    }
    const std::vector<std::string> parts = split_path(parsed->path);
    toml::table* target = &document;
    if (parts.size() == 2) {
      toml::node* section = document.get(parts[0]);
      if (section == nullptr) {
        document.insert_or_assign(parts[0], toml::table{});
        section = document.get(parts[0]);
      }
      // A section that is not a table is reported by the reader; there is nowhere to put the key.
      target = section->as_table();
      if (target == nullptr) continue;
    }
    target->insert_or_assign(parts.back(), parsed->value());
    ctx.mark_overridden(parsed->path, text, index);
    assigned.insert(parsed->path);
    // `--set schedule.steps=1000` on a file with `epochs = 90` means steps instead of epochs.
    drop_exclusive_siblings(document, parsed->path, assigned);
  }
}

}  // namespace batchlab::config
