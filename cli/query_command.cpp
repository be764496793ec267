// `batchlab query --db PATH "SELECT ..." [--format table|csv|json|markdown]`: read-only SQL.
#include <fmt/format.h>

#include "cli/app.h"
#include "cli/args.h"
#include "results/query.h"

namespace batchlab::cli {

int cmd_query(const std::vector<std::string>& argv) {
  Args args(argv, {{"db", true, false}, {"format", true, false}},
            "batchlab query --db PATH \"SELECT ...\" [--format table|csv|json|markdown]");
  const auto db = args.value("db");
  if (!db) throw UsageError(fmt::format("missing --db PATH\nusage: {}", args.usage()));
  const std::string sql = args.positional("SQL statement");
  const std::string format_name = args.value("format").value_or("table");
  const auto format = results::parse_query_format(format_name);
  if (!format) {
    throw UsageError(
        fmt::format("--format {}: not a format; use table, csv, json or markdown\nusage: {}",
                    format_name, args.usage()));
  }
  const auto result = results::query_readonly(*db, sql);
  fmt::print("{}", results::format_result(result, *format));
  return kExitOk;
}

}  // namespace batchlab::cli
