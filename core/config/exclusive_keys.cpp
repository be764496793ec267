#include "core/config/exclusive_keys.h"

#include <algorithm>

namespace batchlab::config {

const std::vector<ExclusiveGroup>& exclusive_groups() {
  static const std::vector<ExclusiveGroup> groups = {
      {{"schedule.warmup_epochs", "schedule.warmup_steps", "schedule.warmup_fraction"}, false},
      {{"schedule.epochs", "schedule.steps", "schedule.budget"}, true},
  };
  return groups;
}

std::vector<std::string> exclusive_siblings(const std::string& path) {
  std::vector<std::string> out;
  for (const auto& group : exclusive_groups()) {
    if (std::find(group.paths.begin(), group.paths.end(), path) == group.paths.end()) continue;
    for (const auto& other : group.paths) {
      if (other != path) out.push_back(other);
    }
  }
  return out;
}

std::vector<std::string> drop_exclusive_siblings(toml::table& document, const std::string& path,
                                                 const std::set<std::string>& keep) {
  std::vector<std::string> dropped;
  for (const auto& sibling : exclusive_siblings(path)) {
    if (keep.count(sibling) != 0) continue;
    // Every grouped key is section.key.
    const auto dot = sibling.find('.');
    toml::table* section = document[sibling.substr(0, dot)].as_table();
    if (section != nullptr && section->erase(sibling.substr(dot + 1)) > 0) {
      dropped.push_back(sibling);
    }
  }
  return dropped;
}

}  // namespace batchlab::config
