#include "core/optim/param_groups.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

#include "core/config/param_rule.h"
#include "core/config/preconditions.h"
#include "core/errors.h"

namespace batchlab::optim {
namespace {

// "a, b, c, ... (161 in all)": enough names to spot a typo without flooding the terminal.
std::string some_names(const std::vector<NamedParameter>& params) {
  constexpr size_t kShown = 6;
  std::string out;
  for (size_t i = 0; i < params.size() && i < kShown; ++i) {
    if (i > 0) out += ", ";
    out += params[i].name;
  }
  if (params.size() > kShown) out += fmt::format(", ... ({} in all)", params.size());
  return out;
}

struct Rule {
  std::string pattern;
  std::string key;  // config key path for diagnostics
  double weight_decay = 0.0;
  bool adapt = true;
  double lr_scale = 1.0;
  bool must_match = true;  // false only for the default exclude and the catch-all
};

}  // namespace

bool is_valid_rule(const std::string& pattern, std::string* why) {
  // The syntax is the schema's rule (core/config/param_rule.h), checked when the config is read.
  const auto problem = config::ParamRule{}(pattern);
  if (problem && why != nullptr) *why = *problem;
  return !problem;
}

bool glob_match(const std::string& pattern, const std::string& name) {
  // Iterative matcher with single-star backtracking: linear in practice, no recursion.
  size_t p = 0;
  size_t n = 0;
  size_t star = std::string::npos;  // position of the last `*` seen in the pattern
  size_t star_n = 0;                // name position that `*` currently extends to
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_n = n;
    } else if (star != std::string::npos) {
      p = star + 1;
      n = ++star_n;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool rule_matches(const std::string& rule, const std::string& name, int64_t ndim) {
  if (auto bound = config::ndim_bound(rule)) return ndim < *bound;
  return glob_match(rule, name);
}

std::vector<ParamGroupSpec> assign_param_groups(const config::OptimConfig& optim,
                                                const std::vector<NamedParameter>& params) {
  std::vector<Rule> rules;
  for (size_t i = 0; i < optim.groups.size(); ++i) {
    const config::ParamGroupRule& g = optim.groups[i];
    Rule r;
    r.pattern = g.match;
    r.key = fmt::format("optim.groups[{}].match", i);
    r.weight_decay = g.weight_decay.value_or(optim.weight_decay);
    r.adapt = optim.always_adapt || g.adapt.value_or(true);
    r.lr_scale = g.lr_scale;
    rules.push_back(r);
  }
  const bool default_exclude = optim.exclude == config::OptimConfig{}.exclude;
  for (size_t i = 0; i < optim.exclude.size(); ++i) {
    Rule r;
    r.pattern = optim.exclude[i];
    r.key = fmt::format("optim.exclude[{}]", i);
    r.weight_decay = 0.0;
    r.adapt = optim.always_adapt;
    r.must_match = !default_exclude;
    rules.push_back(r);
  }
  Rule catch_all;
  catch_all.pattern = "default";
  catch_all.weight_decay = optim.weight_decay;
  catch_all.adapt = true;
  catch_all.must_match = false;

  for (const Rule& r : rules) {
    std::string why;
    config::expect(is_valid_rule(r.pattern, &why), "assign_param_groups",
                   fmt::format("{} = \"{}\": {}", r.key, r.pattern, why));
  }

  std::vector<Diagnostic> problems;

  std::vector<ParamGroupSpec> groups(rules.size() + 1);
  std::vector<bool> matched_any(rules.size(), false);  // pattern matched a name, even if shadowed
  std::unordered_set<const void*> seen;
  for (size_t i = 0; i < params.size(); ++i) {
    const NamedParameter& p = params[i];
    if (!p.tensor.defined()) {
      throw Error(fmt::format("parameter {} is an undefined tensor", p.name));
    }
    if (!seen.insert(p.tensor.unsafeGetTensorImpl()).second) continue;  // tied weight
    const int64_t ndim = p.tensor.dim();
    size_t winner = rules.size();  // the catch-all
    for (size_t r = 0; r < rules.size(); ++r) {
      if (!rule_matches(rules[r].pattern, p.name, ndim)) continue;
      matched_any[r] = true;
      if (winner == rules.size()) winner = r;
    }
    groups[winner].members.push_back(i);
  }

  for (size_t r = 0; r < rules.size(); ++r) {
    if (!rules[r].must_match || !groups[r].members.empty()) continue;
    const std::string what =
        matched_any[r] ? "every parameter it matches is already taken by an earlier rule (first "
                         "match wins)"
                       : "matches no parameter";
    problems.push_back({"", 0, 0, rules[r].key, rules[r].pattern,
                        fmt::format("{}; parameters are: {}", what, some_names(params))});
  }
  if (!problems.empty()) throw ConfigError(std::move(problems));

  std::vector<ParamGroupSpec> out;
  for (size_t r = 0; r <= rules.size(); ++r) {
    if (groups[r].members.empty()) continue;
    const Rule& rule = r < rules.size() ? rules[r] : catch_all;
    ParamGroupSpec spec;
    spec.rule = rule.pattern;
    spec.weight_decay = rule.weight_decay;
    spec.adapt = rule.adapt;
    spec.lr_scale = rule.lr_scale;
    spec.members = std::move(groups[r].members);
    out.push_back(std::move(spec));
  }
  return out;
}

}  // namespace batchlab::optim
