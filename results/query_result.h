// The result of a read-only query (query.h) and its renderings: an aligned text table, CSV and
// JSON, as `batchlab query --format` and the analysis reports print them.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace batchlab::results {

enum class ValueType { kNull, kInteger, kReal, kText, kBlob };

std::string_view to_string(ValueType type);

struct QueryResult {
  std::vector<std::string> columns;
  // Each cell as text: integers in decimal, reals in the shortest form that reads back to the
  // same double (always with a '.', 'e' or "inf", so "1.0" not "1"), blobs as lowercase hex;
  // nullopt = NULL.
  std::vector<std::vector<std::optional<std::string>>> rows;
  // Same shape as rows: the SQLite storage class of each cell.
  std::vector<std::vector<ValueType>> types;
};

enum class QueryFormat { kTable, kCsv, kJson, kMarkdown };

// `value` as a JSON string literal: quotes, backslashes and control characters escaped. The one
// JSON string escaper (the renderings here, the CLI's JSON output).
std::string json_string(std::string_view value);

// "table", "csv", "json" or "markdown"; nullopt otherwise.
std::optional<QueryFormat> parse_query_format(std::string_view name);

// Aligned columns separated by two spaces, a dashed rule under the header, numeric columns
// right-aligned, NULL shown as `null_text` (`batchlab query` shows SQL's NULL; the reports leave
// the cell empty, as their CSV and Markdown do), control characters escaped (\n, \t, \r), no
// trailing spaces. Nothing at all for a statement without result columns.
std::string format_table(const QueryResult& result, std::string_view null_text = "NULL");
// RFC 4180 quoting (fields with a comma, quote, CR or LF are quoted, quotes doubled) with LF line
// ends; NULL is an empty field and an empty string is "" so the two stay apart.
std::string format_csv(const QueryResult& result);
// An array of objects, one row per line; numbers as numbers, NULL (and a stored +-inf, which JSON
// cannot spell) as null, blobs as hex strings.
std::string format_json(const QueryResult& result);
// A GitHub-flavoured Markdown table: numeric columns right-aligned (`---:`), `|` in cells escaped,
// newlines as <br>, NULL as an empty cell. For reports pasted into docs.
std::string format_markdown(const QueryResult& result);
// `null_text`: what the table format shows for NULL (the other formats have their own way).
std::string format_result(const QueryResult& result, QueryFormat format,
                          std::string_view null_text = "NULL");

}  // namespace batchlab::results
