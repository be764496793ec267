#include "sweeps/spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/config/toml_text.h"
#include "sweeps/spec_reader.h"

namespace batchlab::sweeps {

namespace fs = std::filesystem;

std::vector<std::string> SweepSpec::swept_keys() const {
  std::vector<std::string> keys;
  for (const auto& dim : dimensions) {
    for (const auto& axis : dim.axes) keys.push_back(axis.key);
  }
  return keys;
}

bool SweepSpec::assigns(const std::string& key) const {
  for (const auto& k : swept_keys()) {
    if (k == key) return true;
  }
  for (const auto& s : set) {
    if (s.key == key) return true;
  }
  for (const auto& w : whens) {
    for (const auto& s : w.settings) {
      if (s.key == key) return true;
    }
  }
  return false;
}

SweepSpec parse_sweep_spec(std::string_view text, const std::string& source_name) {
  auto storage = std::make_shared<SpecStorage>();
  storage->document = config::parse_toml(text, source_name);
  SpecReader reader(source_name, storage);
  SweepSpec spec = reader.read();
  auto& diagnostics = reader.diagnostics();
  if (!diagnostics.empty()) {
    std::stable_sort(diagnostics.begin(), diagnostics.end(),
                     [](const Diagnostic& a, const Diagnostic& b) {
                       // Positioned problems in file order, then those without a position.
                       if ((a.line == 0) != (b.line == 0)) return a.line != 0;
                       return a.line != b.line ? a.line < b.line : a.column < b.column;
                     });
    throw ConfigError(std::move(diagnostics));
  }
  spec.text = std::string(text);
  spec.storage = std::move(storage);
  return spec;
}

SweepSpec load_sweep_spec(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    throw InputError(fmt::format("sweep spec '{}' does not exist or is not a file", path));
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) throw InputError(fmt::format("sweep spec '{}' cannot be read", path));
  return parse_sweep_spec(text.str(), path);
}

bool same_value(const toml::node& a, const toml::node& b) {
  if (a.is_number() && b.is_number()) {
    const double x =
        a.is_integer() ? static_cast<double>(a.as_integer()->get()) : a.as_floating_point()->get();
    const double y =
        b.is_integer() ? static_cast<double>(b.as_integer()->get()) : b.as_floating_point()->get();
    return x == y;
  }
  if (a.type() != b.type()) return false;
  if (const auto* s = a.as_string()) return s->get() == b.as_string()->get();
  if (const auto* v = a.as_boolean()) return v->get() == b.as_boolean()->get();
  if (const auto* x = a.as_array()) {
    const auto* y = b.as_array();
    if (x->size() != y->size()) return false;
    for (size_t i = 0; i < x->size(); ++i) {
      if (!same_value(*x->get(i), *y->get(i))) return false;
    }
    return true;
  }
  if (const auto* x = a.as_table()) {
    const auto* y = b.as_table();
    if (x->size() != y->size()) return false;
    for (auto&& [key, value] : *x) {
      const toml::node* other = y->get(key.str());
      if (other == nullptr || !same_value(value, *other)) return false;
    }
    return true;
  }
  return config::render_node(a) == config::render_node(b);
}

}  // namespace batchlab::sweeps
