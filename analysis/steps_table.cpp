#include "analysis/steps_table.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>

#include "core/errors.h"

namespace batchlab::analysis {

namespace {

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  std::string field;
  while (std::getline(in, field, ',')) {
    const auto b = field.find_first_not_of(" \t\r");
    const auto e = field.find_last_not_of(" \t\r");
    out.push_back(b == std::string::npos ? "" : field.substr(b, e - b + 1));
  }
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

std::optional<double> number(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v)) return std::nullopt;
  return v;
}

// The index of each role's column in the header; -1 for an optional one it lacks.
struct ColumnIndex {
  int series = -1, batch = -1, steps = -1, seed = -1, target = -1;
};

ColumnIndex index_columns(const std::string& path, const std::vector<std::string>& header,
                          const StepsColumns& c) {
  auto find = [&](const std::string& name, bool required) {
    for (size_t i = 0; i < header.size(); ++i) {
      if (header[i] == name) return static_cast<int>(i);
    }
    if (required) {
      throw InputError(fmt::format(
          "{}:1: no column '{}' in the header ({}); name the table's columns with --columns, e.g. "
          "--columns series=model,batch=batch_sequences,steps=min_steps_to_goal",
          path, name, fmt::join(header, ", ")));
    }
    return -1;
  };
  return {find(c.series, true), find(c.batch, true), find(c.steps, true), find(c.seed, false),
          c.target.empty() ? -1 : find(c.target, true)};
}

// The offset of the first byte that does not begin a well-formed UTF-8 sequence (overlong forms
// and surrogates included, as JSON writers refuse them); npos when there is none.
size_t first_bad_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n = 0;                        // continuation bytes
    unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
    if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      lo = c == 0xE0 ? 0xA0 : lo;
      hi = c == 0xED ? 0x9F : hi;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      lo = c == 0xF0 ? 0x90 : lo;
      hi = c == 0xF4 ? 0x8F : hi;
    } else {
      return i;
    }
    if (s.size() - i <= n) return i;
    for (size_t k = 1; k <= n; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return i;
    }
    i += n + 1;
  }
  return std::string_view::npos;
}

// Names from the table end up in the report's JSON, which holds UTF-8 only (found by
// fuzz_steps_csv: a byte 0xB0 in a series name ended `report --format json` with nlohmann's
// exception instead of a message).
void check_utf8(const std::string& where, std::string_view text) {
  const size_t at = first_bad_utf8(text);
  if (at == std::string_view::npos) return;
  throw InputError(
      fmt::format("{}: byte 0x{:02X} at column {} is not UTF-8 text; save the table as UTF-8",
                  where, static_cast<unsigned char>(text[at]), at + 1));
}

double field_number(const std::string& path, int line, const std::string& role,
                    const std::string& text) {
  const auto v = number(text);
  if (!v) {
    throw InputError(
        fmt::format("{}:{}: {} '{}' is not a number; give one per row", path, line, role, text));
  }
  return *v;
}

StudyCellRecord cell_of(const std::string& path, int line, const std::vector<std::string>& row,
                        const ColumnIndex& ix, const std::string& target_name) {
  StudyCellRecord c;
  c.cell_id = fmt::format("{}:{}", path, line);
  c.sweep_id = path;
  c.optimizer = row[ix.series];
  const double batch = field_number(path, line, "batch", row[ix.batch]);
  // 2^53: past it a double no longer holds every integer, and the cast to int64 below must stay
  // in range (found by fuzz_steps_csv: a batch of 1e75 was undefined behaviour).
  if (!(batch >= 1.0) || std::floor(batch) != batch || batch > 9007199254740992.0) {
    throw InputError(
        fmt::format("{}:{}: batch '{}' is not a positive integer", path, line, row[ix.batch]));
  }
  c.global_batch = static_cast<int64_t>(batch);
  const double steps = field_number(path, line, "steps", row[ix.steps]);
  if (!(steps > 0.0)) {
    throw InputError(fmt::format("{}:{}: steps '{}' must be positive", path, line, row[ix.steps]));
  }
  c.steps_to_target = steps;
  c.samples_to_target = steps * batch;
  if (ix.seed >= 0) {
    const double seed = field_number(path, line, "seed", row[ix.seed]);
    if (std::floor(seed) != seed || std::fabs(seed) > 9007199254740992.0) {
      throw InputError(fmt::format("{}:{}: seed '{}' is not an integer", path, line, row[ix.seed]));
    }
    c.seed = static_cast<int64_t>(seed);
  }
  c.target.metric = target_name;
  if (ix.target >= 0) c.target.value = field_number(path, line, "target", row[ix.target]);
  c.status = "reached";
  return c;
}

}  // namespace

StepsColumns parse_steps_columns(const std::string& spec) {
  check_utf8(fmt::format("--columns '{}'", spec), spec);
  StepsColumns out;
  std::map<std::string, std::string*> roles = {{"series", &out.series},
                                               {"batch", &out.batch},
                                               {"steps", &out.steps},
                                               {"seed", &out.seed},
                                               {"target", &out.target}};
  for (const auto& entry : split(spec)) {
    const auto eq = entry.find('=');
    const auto role = eq == std::string::npos ? entry : entry.substr(0, eq);
    if (eq == std::string::npos || !roles.count(role) || eq + 1 == entry.size()) {
      throw InputError(fmt::format(
          "--columns '{}': '{}' is not ROLE=COLUMN with ROLE one of series, batch, steps, seed, "
          "target",
          spec, entry));
    }
    *roles[role] = entry.substr(eq + 1);
  }
  return out;
}

StudyRecords read_steps_csv(const std::string& path, const StepsColumns& columns) {
  std::ifstream in(path);
  if (!in) {
    throw InputError(
        fmt::format("--steps-csv {}: no such readable file; give a CSV with a header "
                    "line (series,batch,steps[,seed])",
                    path));
  }
  std::string line;
  std::getline(in, line);
  check_utf8(path + ":1", line);
  const auto header = split(line);
  const ColumnIndex ix = index_columns(path, header, columns);
  StudyRecords out;
  for (int number_of_line = 2; std::getline(in, line); ++number_of_line) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    check_utf8(fmt::format("{}:{}", path, number_of_line), line);
    if (line.find('"') != std::string::npos) {
      throw InputError(fmt::format("{}:{}: quoted fields are not read; write plain values", path,
                                   number_of_line));
    }
    const auto row = split(line);
    if (row.size() != header.size()) {
      throw InputError(fmt::format("{}:{}: {} fields where the header has {}", path, number_of_line,
                                   row.size(), header.size()));
    }
    out.cells.push_back(cell_of(path, number_of_line, row, ix, columns.target));
  }
  if (out.cells.empty()) throw InputError(fmt::format("{}: no rows under the header", path));
  return out;
}

}  // namespace batchlab::analysis
