// `batchlab report --db PATH [--group-by k1,k2] [--where SQL] [--metric test_acc|test_loss]
//                  [--format table|csv|json|markdown]`: per-group results of a sweep database.
#include <fmt/format.h>

#include <sstream>

#include "analysis/report.h"
#include "cli/app.h"
#include "cli/args.h"

namespace batchlab::cli {

namespace {

std::vector<std::string> split_keys(const std::string& text) {
  std::vector<std::string> keys;
  std::stringstream in(text);
  std::string key;
  while (std::getline(in, key, ',')) {
    const auto b = key.find_first_not_of(' ');
    const auto e = key.find_last_not_of(' ');
    if (b != std::string::npos) keys.push_back(key.substr(b, e - b + 1));
  }
  return keys;
}

}  // namespace

int cmd_report(const std::vector<std::string>& argv) {
  Args args(argv,
            {{"db", true, false},
             {"group-by", true, false},
             {"where", true, false},
             {"metric", true, false},
             {"format", true, false}},
            "batchlab report --db PATH [--group-by k1,k2] [--where SQL] "
            "[--metric test_acc|test_loss] [--format table|csv|json|markdown]");
  const auto db = args.value("db");
  if (!db) throw UsageError(fmt::format("missing --db PATH\nusage: {}", args.usage()));
  if (!args.positionals().empty()) {
    throw UsageError(fmt::format("unexpected argument '{}'\nusage: {}", args.positionals().front(),
                                 args.usage()));
  }
  analysis::ReportOptions options;
  if (auto g = args.value("group-by")) {
    options.group_by = split_keys(*g);
    if (options.group_by.empty()) {
      throw UsageError(
          fmt::format("--group-by '{}': give comma-separated keys, e.g. "
                      "optimizer,global_batch\nusage: {}",
                      *g, args.usage()));
    }
  }
  options.where = args.value("where").value_or("");
  options.metric = args.value("metric").value_or("test_acc");
  const std::string format_name = args.value("format").value_or("table");
  const auto format = results::parse_query_format(format_name);
  if (!format) {
    throw UsageError(
        fmt::format("--format {}: not a format; use table, csv, json or markdown\nusage: {}",
                    format_name, args.usage()));
  }
  const auto report = analysis::build_report(*db, options);
  fmt::print("{}", analysis::format_report(report, *format));
  return kExitOk;
}

}  // namespace batchlab::cli
