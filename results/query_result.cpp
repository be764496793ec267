#include "results/query_result.h"

#include <fmt/format.h>

#include <algorithm>

namespace batchlab::results {

namespace {

// Display width in code points: UTF-8 continuation bytes take no column of their own.
std::size_t display_width(std::string_view text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

// A newline or tab inside a cell would break the table's alignment.
std::string table_cell(const std::optional<std::string>& value, std::string_view null_text) {
  if (!value) return std::string(null_text);
  std::string text;
  text.reserve(value->size());
  for (char c : *value) {
    switch (c) {
      case '\n':
        text += "\\n";
        break;
      case '\r':
        text += "\\r";
        break;
      case '\t':
        text += "\\t";
        break;
      default:
        text += c;
    }
  }
  return text;
}

void append_padded(std::string& line, const std::string& text, std::size_t width, bool right) {
  const std::size_t pad = width - std::min(width, display_width(text));
  if (right) line.append(pad, ' ');
  line += text;
  if (!right) line.append(pad, ' ');
}

void append_line(std::string& out, std::string line) {
  while (!line.empty() && line.back() == ' ') line.pop_back();
  out += line;
  out += '\n';
}

std::string csv_field(const std::optional<std::string>& value) {
  if (!value) return {};
  if (value->empty()) return "\"\"";
  if (value->find_first_of(",\"\r\n") == std::string::npos) return *value;
  std::string text = "\"";
  for (char c : *value) {
    if (c == '"') text += '"';
    text += c;
  }
  text += '"';
  return text;
}

std::string json_value(const std::optional<std::string>& value, ValueType type) {
  if (!value) return "null";
  switch (type) {
    case ValueType::kInteger:
      return *value;
    case ValueType::kReal:
      if (value->find("inf") != std::string::npos || value->find("nan") != std::string::npos) {
        return "null";
      }
      return *value;
    default:
      return json_string(*value);
  }
}

ValueType type_at(const QueryResult& result, std::size_t row, std::size_t col) {
  if (row < result.types.size() && col < result.types[row].size()) return result.types[row][col];
  return result.rows[row][col] ? ValueType::kText : ValueType::kNull;
}

}  // namespace

std::string json_string(std::string_view value) {
  std::string text = "\"";
  for (char c : value) {
    switch (c) {
      case '"':
        text += "\\\"";
        break;
      case '\\':
        text += "\\\\";
        break;
      case '\b':
        text += "\\b";
        break;
      case '\f':
        text += "\\f";
        break;
      case '\n':
        text += "\\n";
        break;
      case '\r':
        text += "\\r";
        break;
      case '\t':
        text += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          text += fmt::format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
        } else {
          text += c;
        }
    }
  }
  text += '"';
  return text;
}

std::string_view to_string(ValueType type) {
  switch (type) {
    case ValueType::kNull:
      return "NULL";
    case ValueType::kInteger:
      return "INTEGER";
    case ValueType::kReal:
      return "REAL";
    case ValueType::kText:
      return "TEXT";
    case ValueType::kBlob:
      return "BLOB";
  }
  return "?";
}

std::optional<QueryFormat> parse_query_format(std::string_view name) {
  if (name == "table") return QueryFormat::kTable;
  if (name == "csv") return QueryFormat::kCsv;
  if (name == "json") return QueryFormat::kJson;
  if (name == "markdown") return QueryFormat::kMarkdown;
  return std::nullopt;
}

std::string format_table(const QueryResult& result, std::string_view null_text) {
  const std::size_t ncols = result.columns.size();
  if (ncols == 0) return {};
  std::vector<std::size_t> width(ncols);
  // A column is right-aligned when every non-NULL cell is a number (and there is one).
  std::vector<bool> numeric(ncols, false);
  std::vector<bool> has_text(ncols, false);
  for (std::size_t c = 0; c < ncols; ++c) width[c] = display_width(result.columns[c]);
  for (std::size_t r = 0; r < result.rows.size(); ++r) {
    for (std::size_t c = 0; c < ncols && c < result.rows[r].size(); ++c) {
      width[c] = std::max(width[c], display_width(table_cell(result.rows[r][c], null_text)));
      const ValueType type = type_at(result, r, c);
      if (type == ValueType::kInteger || type == ValueType::kReal) {
        numeric[c] = true;
      } else if (type != ValueType::kNull) {
        has_text[c] = true;
      }
    }
  }
  for (std::size_t c = 0; c < ncols; ++c) numeric[c] = numeric[c] && !has_text[c];

  std::string out;
  std::string line;
  for (std::size_t c = 0; c < ncols; ++c) {
    if (c > 0) line += "  ";
    append_padded(line, result.columns[c], width[c], numeric[c]);
  }
  append_line(out, std::move(line));
  line.clear();
  for (std::size_t c = 0; c < ncols; ++c) {
    if (c > 0) line += "  ";
    line.append(width[c], '-');
  }
  append_line(out, std::move(line));
  for (const auto& row : result.rows) {
    line.clear();
    for (std::size_t c = 0; c < ncols; ++c) {
      if (c > 0) line += "  ";
      append_padded(line, table_cell(c < row.size() ? row[c] : std::nullopt, null_text), width[c],
                    numeric[c]);
    }
    append_line(out, std::move(line));
  }
  return out;
}

std::string format_csv(const QueryResult& result) {
  if (result.columns.empty()) return {};
  std::string out;
  for (std::size_t c = 0; c < result.columns.size(); ++c) {
    if (c > 0) out += ',';
    // A column name may be an expression such as `count(*), 1`: quote like any field.
    out += csv_field(result.columns[c]);
  }
  out += '\n';
  for (const auto& row : result.rows) {
    for (std::size_t c = 0; c < result.columns.size(); ++c) {
      if (c > 0) out += ',';
      if (c < row.size()) out += csv_field(row[c]);
    }
    out += '\n';
  }
  return out;
}

std::string format_json(const QueryResult& result) {
  if (result.rows.empty()) return "[]\n";
  std::string out = "[\n";
  for (std::size_t r = 0; r < result.rows.size(); ++r) {
    out += "  {";
    for (std::size_t c = 0; c < result.columns.size(); ++c) {
      if (c > 0) out += ", ";
      out += json_string(result.columns[c]);
      out += ": ";
      const auto& row = result.rows[r];
      out += c < row.size() ? json_value(row[c], type_at(result, r, c)) : "null";
    }
    out += r + 1 < result.rows.size() ? "},\n" : "}\n";
  }
  out += "]\n";
  return out;
}

std::string format_markdown(const QueryResult& result) {
  const std::size_t ncols = result.columns.size();
  if (ncols == 0) return {};
  auto cell = [](const std::optional<std::string>& value) {
    std::string text;
    if (!value) return text;
    for (char c : *value) {
      if (c == '|') {
        text += "\\|";
      } else if (c == '\n') {
        text += "<br>";
      } else if (c != '\r') {
        text += c;
      }
    }
    return text;
  };
  std::vector<bool> numeric(ncols, false);
  std::vector<bool> has_text(ncols, false);
  for (std::size_t r = 0; r < result.rows.size(); ++r) {
    for (std::size_t c = 0; c < ncols && c < result.rows[r].size(); ++c) {
      const ValueType type = type_at(result, r, c);
      if (type == ValueType::kInteger || type == ValueType::kReal) {
        numeric[c] = true;
      } else if (type != ValueType::kNull) {
        has_text[c] = true;
      }
    }
  }
  std::string out = "|";
  for (std::size_t c = 0; c < ncols; ++c) out += " " + cell(result.columns[c]) + " |";
  out += "\n|";
  for (std::size_t c = 0; c < ncols; ++c) out += numeric[c] && !has_text[c] ? " ---: |" : " --- |";
  out += '\n';
  for (const auto& row : result.rows) {
    out += "|";
    for (std::size_t c = 0; c < ncols; ++c) {
      out += " " + cell(c < row.size() ? row[c] : std::nullopt) + " |";
    }
    out += '\n';
  }
  return out;
}

std::string format_result(const QueryResult& result, QueryFormat format,
                          std::string_view null_text) {
  switch (format) {
    case QueryFormat::kTable:
      return format_table(result, null_text);
    case QueryFormat::kCsv:
      return format_csv(result);
    case QueryFormat::kJson:
      return format_json(result);
    case QueryFormat::kMarkdown:
      return format_markdown(result);
  }
  return {};
}

}  // namespace batchlab::results
