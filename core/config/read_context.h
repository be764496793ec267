// State shared by everything that reads one configuration: where each key came from (a file
// position or a --set override), which keys were present, which failed to read, and the
// diagnostics found so far. Keeping positions here lets validation work on the typed structs and
// still report `file:line:col` for the value it rejects.
#pragma once

#include <toml++/toml.h>

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/toml_text.h"
#include "core/errors.h"

namespace batchlab::config {

// The file name diagnostics use for problems in command-line overrides.
inline constexpr std::string_view kOverrideFile = "--set";

class ReadContext {
 public:
  // `known_paths`: every valid full key path, for did-you-mean suggestions across sections.
  ReadContext(std::string source_name, std::vector<std::string> known_paths);

  const std::string& source_name() const { return source_name_; }
  const std::vector<std::string>& known_paths() const { return known_paths_; }

  // `path` (and everything below it) now comes from override number `index` of the command line,
  // `text` ("optim.base_lr=0.1").
  void mark_overridden(const std::string& path, const std::string& text, size_t index);

  // Records that `path` was given, at node's position.
  void note(const std::string& path, const toml::node& node);
  bool present(const std::string& path) const { return present_.count(path) > 0; }

  // A value that could not be read: the struct keeps its default, and rules about this key are
  // suppressed so the user sees the type error rather than a consequence of it.
  void type_error(const std::string& path, const toml::node& node, std::string_view expected,
                  std::string_view hint = {});
  // A value of the right type that is not usable (e.g. a malformed duration).
  void bad_value(const std::string& path, const toml::node& node, std::string rule);
  void unknown_key(const std::string& table_path, const toml::key& key, const toml::node& node,
                   const std::vector<std::string>& local_keys);
  void missing(const std::string& path, std::string rule);

  // A rule violation found on the typed config. `d.key` must be a full path; file, line and
  // column are filled in from where that key (or its nearest enclosing table) came from. Dropped
  // when the key already failed to read.
  void report(Diagnostic d);
  void report_all(std::vector<Diagnostic> diagnostics);

  // `d` (key a full path) with the file, line and column report() would give it, not recorded: for
  // warnings, which must not fail the config.
  Diagnostic located(Diagnostic d) const { return locate(std::move(d)).diagnostic; }

  // A diagnostic that already carries its own location (syntax errors, malformed overrides);
  // `override_index` orders diagnostics about overrides as the overrides were given.
  void add_located(Diagnostic d, size_t override_index = 0);

  // Whether `path`, or a table or array holding it, failed to read.
  bool failed(const std::string& path) const { return failed_or_under_failed(path); }
  bool empty() const { return entries_.empty(); }

  // All diagnostics: file positions in order first, then those without a position, then those
  // from overrides in the order the overrides were given.
  std::vector<Diagnostic> take_sorted();

 private:
  struct Override {
    std::string text;
    size_t index = 0;
  };
  struct Entry {
    Diagnostic diagnostic;
    size_t override_index = 0;
  };

  const Override* override_for(const std::string& path) const;
  // Fills file, line and column of `d` and returns its entry.
  Entry locate(Diagnostic d) const;
  void push_at(Entry entry, SourcePosition at);
  void fail(const std::string& path);
  bool failed_or_under_failed(const std::string& path) const;

  std::string source_name_;
  std::vector<std::string> known_paths_;
  std::map<std::string, Override> overrides_;  // by path
  std::map<std::string, SourcePosition> positions_;
  std::set<std::string> present_;
  std::set<std::string> failed_;
  std::vector<Entry> entries_;
};

// "optim.groups[0].match" -> "optim.groups[0]" -> "optim.groups" -> "optim" -> "".
std::string parent_path(std::string_view path);

}  // namespace batchlab::config
