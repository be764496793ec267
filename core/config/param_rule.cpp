#include "core/config/param_rule.h"

#include <algorithm>
#include <cctype>

namespace batchlab::config {

std::optional<int64_t> ndim_bound(std::string_view rule) {
  constexpr std::string_view kPrefix = "ndim<";
  if (rule.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  const std::string_view digits = rule.substr(kPrefix.size());
  if (digits.empty() || digits.size() > 3 ||
      !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); })) {
    return std::nullopt;
  }
  return std::stoll(std::string(digits));
}

std::optional<std::string> ParamRule::operator()(const std::string& rule) const {
  if (rule.empty())
    return std::string("must not be empty; use a glob such as \"*.bias\" or \"ndim<2\"");
  // A rule starting with "ndim" that is not ndim<N would silently be a glob matching no name.
  if (rule.rfind("ndim", 0) == 0 && !ndim_bound(rule)) {
    return std::string(
        "dimension rules are written ndim<N with N a small integer, e.g. \"ndim<2\"");
  }
  return std::nullopt;
}

}  // namespace batchlab::config
