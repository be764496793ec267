// Experiment keys as a sweep spec writes them: the tables of [grid], [[zip]], [set] and the
// when-clauses hold "section.key" entries, quoted ("optim.base_lr" = ...) or nested one level
// (optim.base_lr = ..., [grid.optim]). This flattens them and checks them against core/config's
// known keys, with the same did-you-mean as `--set`.
#pragma once

#include <toml++/toml.h>

#include <optional>
#include <string>
#include <vector>

#include "sweeps/spec.h"

namespace batchlab::sweeps {

struct FlatEntry {
  std::string key;  // "optim.base_lr"
  const toml::node* node = nullptr;
  Location where;
};

// The entries of `table` with nested section tables flattened into "section.key".
std::vector<FlatEntry> flatten_keys(const toml::table& table);

// Why `path` is not an experiment key ("unknown key, did you mean optim.base_lr?"), or nullopt
// when it is one.
std::optional<std::string> unknown_experiment_key_rule(const std::string& path);

// A value as coordinates show it: strings without quotes (lars), everything else as TOML (0.1).
std::string display_text(const toml::node& node);

}  // namespace batchlab::sweeps
