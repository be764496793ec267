#include "core/config/rules.h"

#include <fmt/format.h>

#include <cctype>

#include "core/config/suggest.h"

namespace batchlab::config {

std::string format_bound(double bound) { return fmt::format("{}", bound); }

std::string InRange::describe() const {
  return fmt::format("{}{}, {}{}", lo_closed ? "[" : "(", format_bound(lo), format_bound(hi),
                     hi_closed ? "]" : ")");
}

std::optional<std::string> OneOf::operator()(const std::string& value) const {
  for (const auto& choice : choices) {
    if (choice == value) return std::nullopt;
  }
  std::string message = "must be one of " + join_choices(choices);
  if (auto close = closest_match(value, choices)) message += "; did you mean " + *close + "?";
  return message;
}

std::optional<std::string> NonEmpty::operator()(const std::string& value) const {
  if (!value.empty()) return std::nullopt;
  return std::string("must not be empty");
}

std::optional<std::string> Sha256Hex::operator()(const std::string& value) const {
  const bool hex =
      value.size() == 64 && value.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (value.empty() || hex) return std::nullopt;  // "" = not recorded
  return std::string(
      "must be a SHA-256 in 64 lower-case hex digits (batchlab writes it: remove the key rather "
      "than edit it)");
}

std::optional<std::string> DeviceName::operator()(const std::string& value) const {
  if (value == "cpu" || value == "cuda") return std::nullopt;
  constexpr std::string_view kCuda = "cuda:";
  if (value.size() > kCuda.size() && value.compare(0, kCuda.size(), kCuda) == 0) {
    bool digits = true;
    for (size_t i = kCuda.size(); i < value.size(); ++i) {
      digits = digits && std::isdigit(static_cast<unsigned char>(value[i]));
    }
    if (digits) return std::nullopt;
  }
  return std::string("must be cpu, cuda or cuda:N with N a device index (e.g. cuda:0)");
}

std::optional<std::string> StrictlyIncreasing::operator()(const std::vector<double>& values) const {
  for (size_t i = 1; i < values.size(); ++i) {
    if (!(values[i] > values[i - 1])) {
      return fmt::format(
          "must be strictly increasing (element {} = {} follows {}); sort them and "
          "drop duplicates",
          i, format_bound(values[i]), format_bound(values[i - 1]));
    }
  }
  return std::nullopt;
}

}  // namespace batchlab::config
