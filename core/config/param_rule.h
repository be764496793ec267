// The syntax of a parameter-group rule (optim.groups[].match and optim.exclude entries): a glob
// over parameter names (`*`, `?`), or `ndim<N` for every parameter with fewer than N dimensions.
// The schema checks the syntax with ParamRule; the optimizer's grouping (core/optim/param_groups.h)
// reads the bound with ndim_bound, so both agree on what a dimension rule is.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace batchlab::config {

// The N of an `ndim<N` rule (N of 1 to 3 digits), or nullopt when the rule is not one.
std::optional<int64_t> ndim_bound(std::string_view rule);

// Field-table rule: nullopt for a usable rule, otherwise what to write instead.
struct ParamRule {
  std::optional<std::string> operator()(const std::string& rule) const;
};

}  // namespace batchlab::config
