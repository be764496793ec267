// `batchlab report --db PATH [--group-by k1,k2] [--where SQL] [--metric test_acc|test_loss]
//                  [--select-by val_acc|val_loss] [--runs] [--format table|csv|json|markdown]`:
// per-group results of a sweep database, or, on a database with a scaling study, the study's cells,
// fits and cost (analysis/study_report.h) unless --runs asks for the per-group report.
#include <fmt/format.h>

#include <sstream>

#include "analysis/budget_report.h"
#include "analysis/report.h"
#include "analysis/steps_table.h"
#include "analysis/study_report.h"
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

constexpr const char* kReportUsage =
    "batchlab report --db PATH [--group-by k1,k2] [--where SQL] [--metric test_acc|test_loss] "
    "[--select-by val_acc|val_loss] [--runs] [--format table|csv|json|markdown]\n"
    "batchlab report --steps-csv FILE [--columns ROLE=NAME,...] [--format ...]\n"
    "  a database with a scaling study (study_cells rows) gets the study report: per cell the best "
    "LR, steps and samples to the target, basin and seed range; per optimizer the fit of S(B) = "
    "S_min + E_min/B with B_crit beside B_simple; the cost in samples. --runs gives the per-group "
    "run report instead.\n"
    "  the best LR of a group is selected on a validation metric (--select-by, default val_acc); "
    "test metrics are only reported.\n"
    "  --steps-csv fits a steps-to-target table (a header, then series,batch,steps[,seed] rows; "
    "--columns names the table's own columns for the roles series, batch, steps, seed, target, "
    "e.g. series=model,batch=batch_sequences,steps=min_steps_to_goal) through the study report's "
    "fit and definitions of the critical batch";

results::QueryFormat format_of(const Args& args) {
  const std::string name = args.value("format").value_or("table");
  const auto format = results::parse_query_format(name);
  if (!format) {
    throw UsageError(
        fmt::format("--format {}: not a format; use table, csv, json or markdown\nusage: {}", name,
                    kReportUsage));
  }
  return *format;
}

analysis::ReportOptions run_report_options(const Args& args) {
  analysis::ReportOptions options;
  if (auto g = args.value("group-by")) {
    options.group_by = split_keys(*g);
    if (options.group_by.empty()) {
      throw UsageError(
          fmt::format("--group-by '{}': give comma-separated keys, e.g. "
                      "optimizer,global_batch\nusage: {}",
                      *g, kReportUsage));
    }
  }
  options.where = args.value("where").value_or("");
  options.metric = args.value("metric").value_or("test_acc");
  options.select_by = args.value("select-by").value_or("val_acc");
  return options;
}

// The study report describes cells, not groups of runs: options of the run report are refused
// there rather than silently ignored.
void check_study_arguments(const Args& args) {
  for (const char* option : {"group-by", "where", "metric"}) {
    if (args.value(option)) {
      throw UsageError(fmt::format(
          "--{}: this database holds a scaling study, whose report has no such option; add --runs "
          "for the per-group report of its runs",
          option));
    }
  }
}

// `report --steps-csv FILE`: a published table through the study report (analysis/steps_table.h).
int report_steps_table(const Args& args, results::QueryFormat format) {
  for (const char* option : {"db", "group-by", "where", "metric", "select-by", "runs"}) {
    if (args.value(option) || (std::string(option) == "runs" && args.flag("runs"))) {
      throw UsageError(
          fmt::format("--{}: --steps-csv reports a table of steps, not a database; leave --{} out",
                      option, option));
    }
  }
  const std::string path = *args.value("steps-csv");
  const auto columns = analysis::parse_steps_columns(args.value("columns").value_or(""));
  const auto study = analysis::study_report_of(analysis::read_steps_csv(path, columns));
  if (format == results::QueryFormat::kTable || format == results::QueryFormat::kMarkdown) {
    fmt::print(
        "Steps-to-target table {}: every row a reached cell (no trials, so no learning rates, "
        "basins or cost).\n",
        path);
  }
  fmt::print("{}", analysis::format_study_report(study, format));
  return kExitOk;
}

}  // namespace

int cmd_report(const std::vector<std::string>& argv) {
  Args args(argv,
            {{"db", true, false},
             {"group-by", true, false},
             {"where", true, false},
             {"metric", true, false},
             {"select-by", true, false},
             {"runs", false, false},
             {"format", true, false},
             {"steps-csv", true, false},
             {"columns", true, false}},
            kReportUsage);
  if (args.value("steps-csv")) return report_steps_table(args, format_of(args));
  const auto db = args.value("db");
  if (!db) throw UsageError(fmt::format("missing --db PATH\nusage: {}", kReportUsage));
  if (!args.positionals().empty()) {
    throw UsageError(fmt::format("unexpected argument '{}'\nusage: {}", args.positionals().front(),
                                 kReportUsage));
  }
  const auto format = format_of(args);
  const auto options = run_report_options(args);
  analysis::check_selection_metric(options.select_by);
  if (!args.flag("runs") && analysis::has_budget_search(*db)) {
    check_study_arguments(args);
    fmt::print("{}", analysis::format_budget_report(analysis::build_budget_report(*db), format));
    return kExitOk;
  }
  if (!args.flag("runs") && analysis::has_study(*db)) {
    check_study_arguments(args);
    const auto study = analysis::build_study_report(*db, {});
    fmt::print("{}", analysis::format_study_report(study, format));
    return kExitOk;
  }
  fmt::print("{}", analysis::format_report(analysis::build_report(*db, options), format));
  return kExitOk;
}

}  // namespace batchlab::cli
