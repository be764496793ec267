// Single-value validation rules used in the field table. A rule is a callable
// `std::optional<std::string>(const T&)`: nullopt when the value is fine, otherwise the rule text
// of the diagnostic, phrased as what the value must be so it doubles as the fix. Rules are
// templated on the value so one `greater_than(0)` serves integer and float keys alike.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace batchlab::config {

// Formats a rule bound without a spurious ".0" ("> 0", "in [0, 1)").
std::string format_bound(double bound);

struct NoRule {
  template <class T>
  std::optional<std::string> operator()(const T&) const {
    return std::nullopt;
  }
};

struct GreaterThan {
  double bound;
  template <class T>
  std::optional<std::string> operator()(const T& value) const {
    if (static_cast<double>(value) > bound) return std::nullopt;
    return "must be > " + format_bound(bound);
  }
};
inline GreaterThan greater_than(double bound) { return {bound}; }

struct AtLeast {
  double bound;
  template <class T>
  std::optional<std::string> operator()(const T& value) const {
    if (static_cast<double>(value) >= bound) return std::nullopt;
    return "must be >= " + format_bound(bound);
  }
};
inline AtLeast at_least(double bound) { return {bound}; }

// An interval; `[lo, hi)` is in_range(lo, true, hi, false).
struct InRange {
  double lo;
  bool lo_closed;
  double hi;
  bool hi_closed;
  template <class T>
  std::optional<std::string> operator()(const T& value) const {
    const double v = static_cast<double>(value);
    const bool above = lo_closed ? v >= lo : v > lo;
    const bool below = hi_closed ? v <= hi : v < hi;
    if (above && below) return std::nullopt;
    return "must be in " + describe();
  }
  std::string describe() const;
};
inline InRange in_range(double lo, bool lo_closed, double hi, bool hi_closed) {
  return {lo, lo_closed, hi, hi_closed};
}

// An upper bound (core/config/limits.h) on a count that allocates or feeds derived arithmetic;
// `why` gives the reason for the bound and what to do. Combine with a lower bound through both().
struct AtMost {
  double bound;
  std::string why;
  template <class T>
  std::optional<std::string> operator()(const T& value) const {
    if (static_cast<double>(value) <= bound) return std::nullopt;
    return "must be <= " + format_bound(bound) + (why.empty() ? "" : "; " + why);
  }
};
inline AtMost at_most(double bound, std::string why = {}) { return {bound, std::move(why)}; }

// 0 turns the feature off; otherwise the value must exceed `bound` (train.divergence).
struct ZeroOrGreaterThan {
  double bound;
  template <class T>
  std::optional<std::string> operator()(const T& value) const {
    const double v = static_cast<double>(value);
    if (v == 0.0 || v > bound) return std::nullopt;
    return "must be 0 (off) or > " + format_bound(bound);
  }
};
inline ZeroOrGreaterThan zero_or_greater_than(double bound) { return {bound}; }

struct Equals {
  double expected;
  std::string hint;
  template <class T>
  std::optional<std::string> operator()(const T& value) const {
    if (static_cast<double>(value) == expected) return std::nullopt;
    return "must be " + format_bound(expected) + (hint.empty() ? "" : "; " + hint);
  }
};

// A string from a fixed set; the message lists the set and suggests the closest name.
struct OneOf {
  std::vector<std::string> choices;
  std::optional<std::string> operator()(const std::string& value) const;
};
inline OneOf one_of(std::vector<std::string> choices) { return {std::move(choices)}; }

struct NonEmpty {
  std::optional<std::string> operator()(const std::string& value) const;
};

// A SHA-256 as batchlab writes it: 64 lower-case hex digits (or "": none recorded).
struct Sha256Hex {
  std::optional<std::string> operator()(const std::string& value) const;
};

// "cpu", "cuda" or "cuda:N".
struct DeviceName {
  std::optional<std::string> operator()(const std::string& value) const;
};

// Strictly increasing sequence (schedule milestones).
struct StrictlyIncreasing {
  std::optional<std::string> operator()(const std::vector<double>& values) const;
};

// Applies `rule` to every element of an array or vector; names the first offending element.
template <class Rule>
struct Each {
  Rule rule;
  template <class Container>
  std::optional<std::string> operator()(const Container& values) const {
    size_t index = 0;
    for (const auto& value : values) {
      if (auto message = rule(value)) {
        return "element " + std::to_string(index) + " " + *message;
      }
      ++index;
    }
    return std::nullopt;
  }
};
template <class Rule>
Each<Rule> each(Rule rule) {
  return {std::move(rule)};
}

// Both rules must hold; the first failure is reported.
template <class First, class Second>
struct Both {
  First first;
  Second second;
  template <class T>
  std::optional<std::string> operator()(const T& value) const {
    if (auto message = first(value)) return message;
    return second(value);
  }
};
template <class First, class Second>
Both<First, Second> both(First first, Second second) {
  return {std::move(first), std::move(second)};
}

}  // namespace batchlab::config
