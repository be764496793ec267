#include "cli/sweep_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>

#include "analysis/report.h"
#include "analysis/study_report.h"
#include "cli/sweep_context.h"
#include "core/errors.h"
#include "results/query_result.h"

namespace batchlab::cli {

namespace {

// The swept keys that the optimizer and batch columns do not already show.
std::vector<std::string> other_swept_keys(const sweeps::Plan& plan) {
  std::vector<std::string> keys;
  for (const auto& key : plan.coordinate_keys) {
    if (key != "train.seed" && key != "optim.name" && key != "batch.global") keys.push_back(key);
  }
  return keys;
}

// One group per combination of the swept keys other than the seed.
analysis::ReportOptions options_for(const sweeps::Plan& plan) {
  analysis::ReportOptions options;
  options.group_by = {"optimizer", "global_batch"};
  for (const auto& key : other_swept_keys(plan)) options.group_by.push_back(key);
  options.sweep_id = plan.sweep_name;
  return options;
}

// Groups in plan order (a spec that sweeps the optimizer, then the batch size, reads as a table
// per optimizer and batch), found through the first planned job of each group.
void order_as_planned(const sweeps::Plan& plan, analysis::Report& report) {
  std::map<std::string, size_t> position;
  for (size_t i = 0; i < plan.jobs.size(); ++i) position.emplace(plan.jobs[i].run_id, i);
  auto first_job = [&](const analysis::ReportRow& row) {
    size_t first = plan.jobs.size();
    for (const auto& id : row.run_ids) {
      if (auto it = position.find(id); it != position.end()) first = std::min(first, it->second);
    }
    return first;
  };
  std::stable_sort(report.rows.begin(), report.rows.end(),
                   [&](const auto& a, const auto& b) { return first_job(a) < first_job(b); });
}

// The plan's target (the first job's train.target) among the report's targets.
std::optional<size_t> plan_target(const sweeps::Plan& plan, const analysis::Report& report) {
  if (plan.jobs.empty() || !plan.jobs.front().target) return std::nullopt;
  const config::Target& wanted = *plan.jobs.front().target;
  for (size_t t = 0; t < report.targets.size(); ++t) {
    if (report.targets[t].metric == wanted.metric &&
        std::abs(report.targets[t].value - wanted.value) < 1e-12) {
      return t;
    }
  }
  return std::nullopt;
}

std::string time_to_target(const analysis::ReportRow& row, std::optional<size_t> target) {
  if (!target) return "-";
  const auto& t = row.targets[*target];
  if (t.reached == 0) return t.finished > 0 ? "not reached" : "-";
  std::string text = format_seconds(t.train_s.mean);
  if (t.reached < t.finished) text += fmt::format(" ({}/{} runs)", t.reached, t.finished);
  return text;
}

std::string status_note(const analysis::ReportRow& row) {
  std::string note;
  for (const auto& [status, n] : row.statuses) {
    if (status != "done") note += fmt::format("{}{} {}", note.empty() ? "" : ", ", n, status);
  }
  // A group that learned nothing (SGD at batch 8192 in the quickstart ends at 2.2% test accuracy,
  // below the 10% of guessing) says so here as in the run report.
  if (const std::string chance = analysis::chance_note(row); !chance.empty()) {
    note += (note.empty() ? "" : ", ") + chance;
  }
  return note;
}

std::string mean_text(const analysis::Stat& s, const char* spec) {
  return s.n == 0 ? "-" : fmt::format(fmt::runtime(spec), s.mean);
}

results::QueryResult sweep_table(const analysis::Report& report, const sweeps::Plan& plan) {
  using VT = results::ValueType;
  results::QueryResult table;
  table.columns = {"optimizer", "batch"};
  const auto others = other_swept_keys(plan);
  table.columns.insert(table.columns.end(), others.begin(), others.end());
  for (const char* c : {"peak_lr", "runs", "test_acc", "gap_acc", "gap_loss", "time_to_target",
                        "train_s", "note"}) {
    table.columns.emplace_back(c);
  }
  std::vector<VT> types(table.columns.size(), VT::kText);
  types[1] = VT::kInteger;
  const size_t numbers = 2 + others.size();  // peak_lr, then test_acc, gap_acc, gap_loss
  for (size_t c : {numbers, numbers + 2, numbers + 3, numbers + 4}) types[c] = VT::kReal;
  const auto target = plan_target(plan, report);
  for (const auto& row : report.rows) {
    std::vector<std::optional<std::string>> cells(row.key.begin(), row.key.end());
    for (auto& cell : std::vector<std::string>{
             row.peak_lr ? fmt::format("{:.4g}", *row.peak_lr) : "-",
             fmt::format("{}/{}", row.done, row.runs), mean_text(row.final_metric, "{:.4f}"),
             mean_text(row.gap_acc, "{:+.4f}"), mean_text(row.gap_loss, "{:+.4f}"),
             time_to_target(row, target), row.train_s.n ? format_seconds(row.train_s.mean) : "-",
             status_note(row)}) {
      cells.emplace_back(std::move(cell));
    }
    table.rows.push_back(std::move(cells));
    table.types.push_back(types);
  }
  return table;
}

std::string caption(const analysis::Report& report, const sweeps::Plan& plan) {
  std::string target;
  if (const auto t = plan_target(plan, report)) {
    target = "; target " + report.targets[*t].condition();
  }
  return fmt::format(
      "Results of sweep {} (means over seeds of the final evaluation; gap_acc = train_acc - "
      "test_acc; times on the training clock{}):\n",
      plan.sweep_name, target);
}

}  // namespace

std::string sweep_report(const std::string& db_path, const sweeps::Plan& plan) {
  std::error_code ec;
  if (!std::filesystem::exists(db_path, ec)) return "";
  if (analysis::has_study(db_path, plan.sweep_name)) {
    const auto study = analysis::build_study_report(db_path, {plan.sweep_name});
    return analysis::format_study_report(study, results::QueryFormat::kTable);
  }
  analysis::Report report;
  try {
    report = analysis::build_report(db_path, options_for(plan));
  } catch (const InputError& e) {
    // A summary must not turn a finished sweep into a failure; `batchlab report` says more.
    return fmt::format("(no results table: {})\n", e.what());
  }
  const bool finished = std::any_of(report.rows.begin(), report.rows.end(),
                                    [](const auto& row) { return row.done > 0; });
  if (!finished) return "";
  order_as_planned(plan, report);
  return caption(report, plan) + results::format_table(sweep_table(report, plan));
}

}  // namespace batchlab::cli
