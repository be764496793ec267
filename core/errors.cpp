#include "core/errors.h"

#include <fmt/format.h>

namespace batchlab {

std::string Diagnostic::to_string() const {
  std::string where = file;
  if (line > 0) where += fmt::format(":{}:{}", line, column);
  if (key.empty()) return fmt::format("{}: {}", where, rule);
  if (value.empty()) return fmt::format("{}: {}: {}", where, key, rule);
  return fmt::format("{}: {} = {}: {}", where, key, value, rule);
}

namespace {
std::string join_diagnostics(const std::vector<Diagnostic>& diagnostics) {
  std::string out = fmt::format("{} configuration problem{}:", diagnostics.size(),
                                diagnostics.size() == 1 ? "" : "s");
  for (const auto& d : diagnostics) out += "\n  " + d.to_string();
  return out;
}
}  // namespace

ConfigError::ConfigError(std::vector<Diagnostic> diagnostics)
    : InputError(join_diagnostics(diagnostics)), diagnostics_(std::move(diagnostics)) {}

}  // namespace batchlab
