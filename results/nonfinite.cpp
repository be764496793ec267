#include "results/nonfinite.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "results/errors.h"

namespace batchlab::results {

std::string format_nonfinite(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return fmt::format("{}", value);
}

std::optional<double> NonfiniteWriter::note(std::string_view column, double value) {
  if (std::isfinite(value)) return value;
  if (!text_.empty()) text_ += ',';
  text_ += column;
  text_ += '=';
  text_ += format_nonfinite(value);
  return std::nullopt;
}

std::optional<double> NonfiniteWriter::note(std::string_view column,
                                            const std::optional<double>& value) {
  if (!value) return std::nullopt;
  return note(column, *value);
}

std::optional<std::string> NonfiniteWriter::text() const {
  if (text_.empty()) return std::nullopt;
  return text_;
}

NonfiniteReader::NonfiniteReader(const std::optional<std::string>& text,
                                 const std::string& db_path) {
  if (!text || text->empty()) return;
  std::string_view rest(*text);
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const std::size_t eq = item.find('=');
    const std::string_view name = item.substr(0, eq == std::string_view::npos ? 0 : eq);
    const std::string_view value = eq == std::string_view::npos ? item : item.substr(eq + 1);
    double parsed = 0.0;
    if (value == "nan") {
      parsed = std::numeric_limits<double>::quiet_NaN();
    } else if (value == "inf") {
      parsed = std::numeric_limits<double>::infinity();
    } else if (value == "-inf") {
      parsed = -std::numeric_limits<double>::infinity();
    }
    if (name.empty() || std::isfinite(parsed)) {
      throw StoreError(db_path, fmt::format("malformed nonfinite column `{}`: expected "
                                            "name=nan|inf|-inf separated by commas",
                                            *text));
    }
    values_.emplace_back(std::string(name), parsed);
  }
}

std::optional<double> NonfiniteReader::restore(std::string_view column,
                                               const std::optional<double>& stored) const {
  if (stored) return stored;
  for (const auto& [name, value] : values_) {
    if (name == column) return value;
  }
  return std::nullopt;
}

double NonfiniteReader::restore_required(std::string_view column,
                                         const std::optional<double>& stored) const {
  return restore(column, stored).value_or(std::numeric_limits<double>::quiet_NaN());
}

}  // namespace batchlab::results
