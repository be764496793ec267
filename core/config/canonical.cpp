#include "core/config/canonical.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>
#include <string>

#include "core/config/loader.h"
#include "core/config/schema.h"
#include "core/config/sha256.h"

namespace batchlab::config {

std::string format_float(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // Plain to_chars gives the shortest representation that round-trips (exact, unlike %.17g).
  std::array<char, 64> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  std::string text(buffer.data(), result.ptr);
  // "1" would read back as an integer and change the key's type: TOML floats need a '.' or an
  // exponent.
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

std::string format_integer(int64_t value) { return fmt::format("{}", value); }

std::string format_string(std::string_view value) {
  std::string out = "\"";
  for (const char c : value) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          out += fmt::format("\\u{:04X}", static_cast<unsigned>(static_cast<unsigned char>(c)));
        } else {
          out += c;  // UTF-8 bytes pass through unchanged, as TOML allows
        }
    }
  }
  out += '"';
  return out;
}

// The canonical text's format is part of every recorded result: a change here changes every run
// id (tests pin one id to catch that).
std::string to_canonical_toml(const ExperimentConfig& config) {
  std::string out =
      std::string(kSchemaVersionKey) + " = " + format_integer(config.schema_version) + "\n";
  // experiment_sections() is sorted by name and each section's write() by key, so the text
  // depends only on the values.
  for (const auto& section : experiment_sections()) {
    out += "\n[" + section.name + "]\n";
    for (const auto& [key, value] : section.write(config)) out += key + " = " + value + "\n";
  }
  return out;
}

std::string run_id_of_canonical(std::string_view canonical_toml) {
  return sha256_hex(canonical_toml).substr(0, 16);
}

std::string run_id(const ExperimentConfig& config) {
  return run_id_of_canonical(to_canonical_toml(config));
}

}  // namespace batchlab::config
