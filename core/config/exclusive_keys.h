// Keys that name the same quantity in different units, of which a configuration sets at most one
// (the warmup: epochs, steps or a fraction of the run) or exactly one (the run's length: epochs,
// steps or a wall-clock budget). One definition for the validation, which reports two set in one
// file, and for what replaces a base's choice: `--set schedule.steps=1000` on an experiment that
// says `epochs = 90`, or a sweep axis over schedule.warmup_steps on a base with warmup_epochs,
// means "this instead", so the base's sibling key is dropped rather than reported as a conflict.
#pragma once

#include <toml++/toml.h>

#include <set>
#include <string>
#include <vector>

namespace batchlab::config {

struct ExclusiveGroup {
  std::vector<std::string> paths;  // "schedule.warmup_epochs", ...
  bool exactly_one = false;        // else at most one
};

const std::vector<ExclusiveGroup>& exclusive_groups();

// The other members of every group `path` belongs to ({} for a key in none).
std::vector<std::string> exclusive_siblings(const std::string& path);

// Removes from `document` the siblings of `path` that are not in `keep` (keys the caller itself
// assigns: two of those in one group remain a conflict for the validation to report). Returns the
// paths removed.
std::vector<std::string> drop_exclusive_siblings(toml::table& document, const std::string& path,
                                                 const std::set<std::string>& keep);

}  // namespace batchlab::config
