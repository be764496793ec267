// "Did you mean" suggestions for misspelled keys and enum values.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace batchlab::config {

// Optimal-string-alignment distance (Levenshtein plus adjacent transpositions), so that the common
// typo "bsae_lr" is one edit away from "base_lr".
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `typo`, when close enough to be a plausible misspelling. Besides the
// whole candidate, each '_'-separated word of it is tried (at a cost of one extra edit), so that a
// user who types `lrr` is pointed at `base_lr` rather than at the equally distant but unrelated
// `eps`. Comparison ignores case and treats '-' as '_'. Ties go to the smaller whole-word distance,
// then to the alphabetically first candidate, so suggestions are deterministic.
std::optional<std::string> closest_match(std::string_view typo,
                                         const std::vector<std::string>& candidates);

// The rule text of an unknown-key diagnostic for `key` found in table `table_path` ("" for the top
// level, "optim", "optim.groups[0]"). `local_keys` are the keys valid in that table; `all_paths`
// are every valid full path of the document ("optim.base_lr", "schema_version"), used to point at
// the right section when a key was put in the wrong one. Always says what to do instead.
std::string unknown_key_rule(std::string_view table_path, std::string_view key,
                             const std::vector<std::string>& local_keys,
                             const std::vector<std::string>& all_paths);

// "a, b or c" for messages that list the valid choices.
std::string join_choices(const std::vector<std::string>& choices,
                         std::string_view last_sep = " or ");

}  // namespace batchlab::config
