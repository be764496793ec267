// Parameter groups from ordered name rules (DESIGN.md "Large-batch mechanics").
//
// The rules are, in order: every `[[optim.groups]]` rule, then every `optim.exclude` pattern, then
// an implicit catch-all ("default"). Each parameter joins the group of the FIRST rule that matches
// it, so a specific rule placed early overrides a broad one placed later. A rule is either
//   - a glob over the parameter's dotted name: `*` matches any run of characters (dots included),
//     `?` exactly one character, everything else itself ("layer4.*.conv?.weight", "*.bias"), or
//   - `ndim<N` (N a non-negative integer): every parameter with fewer than N dimensions. `ndim<2`
//     catches biases and normalization scales/shifts, the parameters LARS/LAMB papers exclude.
// Exclude rules give weight decay 0 and no trust-ratio adaptation (unless optim.always_adapt).
// A user rule that ends up with no parameter is almost always a typo or a shadowed rule, so it is a
// ConfigError naming the rule and a few parameter names; the default exclude ["ndim<2"] may be
// empty (a model without biases or norms).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/optim_config.h"

namespace batchlab::optim {

// One trainable tensor and its dotted module path ("layer1.0.conv1.weight").
struct NamedParameter {
  std::string name;
  at::Tensor tensor;
};

// The resolved group of one rule: its settings and the parameters it won.
struct ParamGroupSpec {
  std::string rule;           // the pattern as written, or "default" for the catch-all
  double weight_decay = 0.0;  // resolved (rule value, or optim.weight_decay, or 0 for excludes)
  bool adapt = true;          // trust-ratio adaptation for LARS/LAMB (always_adapt already applied)
  double lr_scale = 1.0;      // multiplies the scheduled learning rate
  std::vector<size_t> members;  // indices into the NamedParameter list, in its order
};

// True when `pattern` is a valid rule (glob, or `ndim<N`); `why` explains a rejection.
bool is_valid_rule(const std::string& pattern, std::string* why = nullptr);

// True when `pattern` (a glob) matches the whole of `name`.
bool glob_match(const std::string& pattern, const std::string& name);

// True when the rule matches the parameter (glob over the name, or the `ndim<N` test).
bool rule_matches(const std::string& rule, const std::string& name, int64_t ndim);

// Splits the parameters into groups in rule order; rules that win no parameter are left out (the
// default exclude silently, any user rule as a ConfigError listing every such rule at once).
// The same tensor listed twice (tied weights) is kept once, under its first name.
std::vector<ParamGroupSpec> assign_param_groups(const config::OptimConfig& optim,
                                                const std::vector<NamedParameter>& params);

}  // namespace batchlab::optim
