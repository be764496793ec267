// Builds a result table (results::QueryResult) one row at a time, naming each column as its
// first row fills it, so a report's rendering reads as the list of its columns.
#pragma once

#include <fmt/format.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "results/query_result.h"

namespace batchlab::analysis {

// What a report's table format shows for a value a row does not have (a number absent: the
// standard deviation of one seed, the steps to a target never reached): an empty cell, as the
// CSV and Markdown renderings leave it, never SQL's NULL.
inline constexpr std::string_view kAbsentCell = "";

struct TableBuilder {
  results::QueryResult table;
  std::vector<std::optional<std::string>> row;
  std::vector<results::ValueType> types;
  bool header_done = false;

  void column(const std::string& name) {
    if (!header_done) table.columns.push_back(name);
  }
  void number(const std::string& name, std::optional<double> v, const char* spec) {
    column(name);
    if (v) {
      row.emplace_back(fmt::format(fmt::runtime(spec), *v));
      types.push_back(results::ValueType::kReal);
    } else {
      row.emplace_back(std::nullopt);
      types.push_back(results::ValueType::kNull);
    }
  }
  void integer(const std::string& name, long long v) {
    column(name);
    row.emplace_back(std::to_string(v));
    types.push_back(results::ValueType::kInteger);
  }
  void text(const std::string& name, const std::string& v) {
    column(name);
    row.emplace_back(v);
    types.push_back(to_number_type(v));
  }
  static results::ValueType to_number_type(const std::string& v) {
    if (v.empty()) return results::ValueType::kText;
    char* end = nullptr;
    std::strtod(v.c_str(), &end);
    return *end == '\0' ? results::ValueType::kReal : results::ValueType::kText;
  }
  void end_row() {
    table.rows.push_back(std::move(row));
    table.types.push_back(std::move(types));
    row.clear();
    types.clear();
    header_done = true;
  }
};

}  // namespace batchlab::analysis
