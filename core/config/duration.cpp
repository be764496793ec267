#include "core/config/duration.h"

#include <array>
#include <cctype>
#include <charconv>
#include <system_error>

namespace batchlab::config {
namespace {

constexpr std::string_view kExpected =
    "write a duration such as \"2h\", \"90m\", \"45s\", \"1h30m\" or \"1.5h\"";

struct Unit {
  char symbol;
  double seconds;
};
constexpr std::array<Unit, 3> kUnits = {{{'h', 3600.0}, {'m', 60.0}, {'s', 1.0}}};

ParsedDuration failure(std::string reason) {
  ParsedDuration out;
  out.error = std::move(reason);
  return out;
}

}  // namespace

ParsedDuration parse_duration(std::string_view text) {
  if (text.empty()) return failure(std::string("empty duration; ") + std::string(kExpected));
  double total = 0.0;
  size_t next_unit = 0;  // units must appear in decreasing size, so "30m1h" is rejected
  size_t pos = 0;
  while (pos < text.size()) {
    // A number: digits, optionally followed by '.' and digits. Signs and exponents are not
    // durations.
    const size_t start = pos;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
    if (pos == start) {
      return failure("expected a number at \"" + std::string(text.substr(start)) + "\"; " +
                     std::string(kExpected));
    }
    if (pos < text.size() && text[pos] == '.') {
      ++pos;
      const size_t fraction = pos;
      while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
      if (pos == fraction)
        return failure("a decimal point needs digits after it; " + std::string(kExpected));
    }
    double number = 0.0;
    const auto [end, ec] = std::from_chars(text.data() + start, text.data() + pos, number);
    if (ec != std::errc() || end != text.data() + pos) {
      return failure("unreadable number \"" + std::string(text.substr(start, pos - start)) + "\"");
    }
    if (pos == text.size()) {
      return failure("missing unit after " + std::string(text.substr(start)) + " (h, m or s); " +
                     std::string(kExpected));
    }
    const char symbol = text[pos++];
    size_t unit = next_unit;
    while (unit < kUnits.size() && kUnits[unit].symbol != symbol) ++unit;
    if (unit == kUnits.size()) {
      bool known = false;
      for (const auto& u : kUnits) known = known || u.symbol == symbol;
      if (known) {
        return failure(std::string("unit '") + symbol +
                       "' out of order or repeated (use h, then m, then s); " +
                       std::string(kExpected));
      }
      return failure(std::string("unknown unit '") + symbol + "' (use h, m or s); " +
                     std::string(kExpected));
    }
    total += number * kUnits[unit].seconds;
    next_unit = unit + 1;
  }
  ParsedDuration out;
  out.seconds = total;
  return out;
}

std::string format_duration(double seconds) {
  // Shortest round-trip digits; to_chars may choose exponent notation ("1e+20"), which the
  // duration grammar does not accept, so fall back to fixed notation in that case.
  std::array<char, 512> buffer{};  // fixed notation of any double fits
  auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), seconds);
  std::string text(buffer.data(), end);
  if (ec != std::errc() || text.find_first_of("eE") != std::string::npos) {
    auto fixed = std::to_chars(buffer.data(), buffer.data() + buffer.size(), seconds,
                               std::chars_format::fixed);
    text.assign(buffer.data(), fixed.ptr);
  }
  return text + "s";
}

}  // namespace batchlab::config
