#include "core/config/read_context.h"

#include <algorithm>
#include <tuple>

#include "core/config/schema.h"
#include "core/config/suggest.h"

namespace batchlab::config {

std::string parent_path(std::string_view path) {
  const size_t cut = path.find_last_of(".[");
  return cut == std::string_view::npos ? std::string() : std::string(path.substr(0, cut));
}

namespace {

// A whole unknown table at the top level ("[optm]") is most likely a misspelled section.
std::string unknown_section_rule(std::string_view name, const std::vector<std::string>& top_keys) {
  std::vector<std::string> sections;
  for (const auto& key : top_keys) {
    if (key != kSchemaVersionKey) sections.push_back(key);
  }
  if (auto close = closest_match(name, sections)) {
    return "unknown section, did you mean [" + *close + "]?";
  }
  for (auto& section : sections) section = "[" + section + "]";
  return "unknown section; valid sections are " + join_choices(sections, " and ");
}

}  // namespace

ReadContext::ReadContext(std::string source_name, std::vector<std::string> known_paths)
    : source_name_(std::move(source_name)), known_paths_(std::move(known_paths)) {}

void ReadContext::mark_overridden(const std::string& path, const std::string& text, size_t index) {
  overrides_[path] = Override{text, index};
}

void ReadContext::note(const std::string& path, const toml::node& node) {
  present_.insert(path);
  positions_[path] = position_of(node);
}

const ReadContext::Override* ReadContext::override_for(const std::string& path) const {
  // A value set by --set owns everything inside it (the elements of an overridden array too).
  for (std::string p = path; !p.empty(); p = parent_path(p)) {
    if (auto it = overrides_.find(p); it != overrides_.end()) return &it->second;
  }
  return nullptr;
}

ReadContext::Entry ReadContext::locate(Diagnostic d) const {
  if (const Override* from = override_for(d.key)) {
    d.file = std::string(kOverrideFile);
    d.line = 0;
    d.column = 0;
    d.rule += " (from --set '" + from->text + "')";
    return {std::move(d), from->index};
  }
  d.file = source_name_;
  // A key that was never written (a default, or a missing required key) is reported at the table
  // that should hold it, when that table was written.
  for (std::string p = d.key; !p.empty(); p = parent_path(p)) {
    if (auto it = positions_.find(p); it != positions_.end() && it->second.line > 0) {
      d.line = it->second.line;
      d.column = it->second.column;
      break;
    }
  }
  return {std::move(d), 0};
}

void ReadContext::fail(const std::string& path) { failed_.insert(path); }

bool ReadContext::failed_or_under_failed(const std::string& path) const {
  for (std::string p = path; !p.empty(); p = parent_path(p)) {
    if (failed_.count(p) > 0) return true;
  }
  return false;
}

void ReadContext::type_error(const std::string& path, const toml::node& node,
                             std::string_view expected, std::string_view hint) {
  std::string rule = "expected " + std::string(expected) + ", found " + node_type_name(node);
  if (!hint.empty()) rule += "; " + std::string(hint);
  bad_value(path, node, std::move(rule));
}

void ReadContext::bad_value(const std::string& path, const toml::node& node, std::string rule) {
  Diagnostic d;
  d.key = path;
  d.value = render_node(node);
  d.rule = std::move(rule);
  push_at(locate(std::move(d)), position_of(node));
  fail(path);
}

void ReadContext::unknown_key(const std::string& table_path, const toml::key& key,
                              const toml::node& node, const std::vector<std::string>& local_keys) {
  Diagnostic d;
  d.key = table_path.empty() ? std::string(key.str()) : table_path + "." + std::string(key.str());
  if (table_path.empty() && node.is_table()) {
    d.rule = unknown_section_rule(key.str(), local_keys);
  } else {
    // Inside an array entry (optim.groups[0]) only that entry's keys make sense as suggestions.
    d.rule = unknown_key_rule(
        table_path, key.str(), local_keys,
        table_path.find('[') == std::string::npos ? known_paths_ : std::vector<std::string>{});
  }
  // The key itself is what is wrong, so point at it rather than at its value.
  SourcePosition at = position_of(key);
  if (at.line == 0) at = position_of(node);
  push_at(locate(std::move(d)), at);
}

void ReadContext::push_at(Entry entry, SourcePosition at) {
  // The node's own position beats the enclosing table's that locate() fell back to; values from
  // --set have no position in the file.
  Diagnostic& d = entry.diagnostic;
  if (d.file == source_name_ && at.line > 0) {
    d.line = at.line;
    d.column = at.column;
  }
  entries_.push_back(std::move(entry));
}

void ReadContext::missing(const std::string& path, std::string rule) {
  Diagnostic d;
  d.key = path;
  d.rule = std::move(rule);
  entries_.push_back(locate(std::move(d)));
  fail(path);
}

void ReadContext::report(Diagnostic d) {
  if (failed_or_under_failed(d.key)) return;
  entries_.push_back(locate(std::move(d)));
}

void ReadContext::report_all(std::vector<Diagnostic> diagnostics) {
  for (auto& d : diagnostics) report(std::move(d));
}

void ReadContext::add_located(Diagnostic d, size_t override_index) {
  entries_.push_back({std::move(d), override_index});
}

std::vector<Diagnostic> ReadContext::take_sorted() {
  auto group = [this](const Diagnostic& d) {
    if (d.file == kOverrideFile) return 2;
    return (d.file == source_name_ && d.line > 0) ? 0 : 1;
  };
  auto order = [&group](const Entry& e) {
    return std::make_tuple(group(e.diagnostic), e.override_index, e.diagnostic.line,
                           e.diagnostic.column);
  };
  std::stable_sort(entries_.begin(), entries_.end(),
                   [&order](const Entry& a, const Entry& b) { return order(a) < order(b); });
  std::vector<Diagnostic> out;
  for (auto& entry : entries_) out.push_back(std::move(entry.diagnostic));
  entries_.clear();
  return out;
}

}  // namespace batchlab::config
