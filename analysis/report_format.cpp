// Renderings of a Report (analysis/report.h): one result table for table/csv/markdown, and a
// structured JSON document with the unrounded numbers.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "analysis/report.h"
#include "analysis/table_builder.h"

namespace batchlab::analysis {

namespace {

std::optional<double> mean_of(const Stat& s) {
  return s.n > 0 ? std::optional<double>(s.mean) : std::nullopt;
}

// Short column suffix for a target: "@0.7", or "@test_acc=0.7" when targets mix metrics.
std::vector<std::string> target_suffixes(const Report& report) {
  bool mixed = false;
  for (const auto& t : report.targets) mixed = mixed || t.metric != report.targets.front().metric;
  std::vector<std::string> out;
  for (const auto& t : report.targets) {
    out.push_back(mixed ? fmt::format("@{}={:g}", t.metric, t.value)
                        : fmt::format("@{:g}", t.value));
  }
  return out;
}

std::string header(const Report& report) {
  std::string out = fmt::format("{} runs", report.total_runs);
  if (!report.constants.empty()) {
    std::vector<std::string> parts;
    for (const auto& [k, v] : report.constants) parts.push_back(k + "=" + v);
    out += fmt::format("; constant: {}", fmt::join(parts, ", "));
  }
  if (!report.targets.empty()) {
    std::vector<std::string> parts;
    for (const auto& t : report.targets) parts.push_back(fmt::format("{} {:g}", t.metric, t.value));
    out += fmt::format("; targets: {}", fmt::join(parts, ", "));
  }
  out += fmt::format(
      ".\n{} = mean over seeds of the final evaluation (sd = standard deviation), best_{} over all "
      "evaluations, gaps at the end (gap_acc = train_acc - test_acc); times on the training clock.",
      report.metric, report.metric);
  bool tuned = false;
  for (const auto& row : report.rows) tuned = tuned || row.lr_values > 1;
  if (tuned) {
    out += fmt::format(
        " Groups with several base LRs report the one with the best mean final {} (held-out "
        "validation; lr_grid = LRs tried).",
        report.select_by);
  }
  return out + "\n";
}

nlohmann::json stat_json(const Stat& s) {
  nlohmann::json j = {{"n", s.n}};
  j["mean"] = s.n > 0 ? nlohmann::json(s.mean) : nlohmann::json(nullptr);
  j["sd"] = s.stddev ? nlohmann::json(*s.stddev) : nlohmann::json(nullptr);
  return j;
}

nlohmann::json row_json(const Report& report, const ReportRow& row) {
  nlohmann::json r;
  r["key"] = nlohmann::json::object();
  for (size_t k = 0; k < report.group_by.size(); ++k) r["key"][report.group_by[k]] = row.key[k];
  r["runs"] = row.runs;
  r["seeds"] = row.seeds;
  r["done"] = row.done;
  r["diverged"] = row.diverged;
  r["failed"] = row.failed;
  r["unfinished"] = row.unfinished;
  r["lr_grid"] = row.lr_values;
  r["base_lr"] = row.base_lr ? nlohmann::json(*row.base_lr) : nlohmann::json(nullptr);
  r["peak_lr"] = row.peak_lr ? nlohmann::json(*row.peak_lr) : nlohmann::json(nullptr);
  r["lr_edge"] = row.lr_edge;
  r["selection_note"] = row.selection_note;
  r["at_chance"] = row.at_chance;
  r["chance_acc"] = row.chance_acc ? nlohmann::json(*row.chance_acc) : nlohmann::json(nullptr);
  r["selection_metric"] = stat_json(row.selection_metric);
  r["train_s"] = stat_json(row.train_s);
  r["statuses"] = row.statuses;
  r["final"] = stat_json(row.final_metric);
  r["best"] = stat_json(row.best_metric);
  r["gap_acc"] = stat_json(row.gap_acc);
  r["gap_loss"] = stat_json(row.gap_loss);
  r["targets"] = nlohmann::json::array();
  for (const auto& tr : row.targets) {
    r["targets"].push_back({{"reached", tr.reached},
                            {"finished", tr.finished},
                            {"steps", stat_json(tr.steps)},
                            {"epochs", stat_json(tr.epochs)},
                            {"samples", stat_json(tr.samples)},
                            {"train_s", stat_json(tr.train_s)},
                            {"gap_acc", stat_json(tr.gap_acc)}});
  }
  return r;
}

std::string report_json(const Report& report) {
  nlohmann::json j;
  j["group_by"] = report.group_by;
  j["metric"] = report.metric;
  j["select_by"] = report.select_by;
  j["total_runs"] = report.total_runs;
  j["constants"] = nlohmann::json::object();
  for (const auto& [k, v] : report.constants) j["constants"][k] = v;
  j["targets"] = nlohmann::json::array();
  for (const auto& t : report.targets)
    j["targets"].push_back({{"metric", t.metric}, {"value", t.value}});
  j["rows"] = nlohmann::json::array();
  for (const auto& row : report.rows) j["rows"].push_back(row_json(report, row));
  j["warnings"] = report.warnings;
  return j.dump(2) + "\n";
}

}  // namespace

results::QueryResult report_table(const Report& report) {
  TableBuilder b;
  bool tuned = false;
  for (const auto& row : report.rows) tuned = tuned || row.lr_values > 1;
  const auto suffixes = target_suffixes(report);
  const std::string& m = report.metric;
  for (const auto& row : report.rows) {
    for (size_t k = 0; k < report.group_by.size(); ++k) {
      if (report.key_shown[k]) b.text(report.group_by[k], row.key[k]);
    }
    b.integer("runs", row.runs);
    b.integer("seeds", row.seeds);
    if (tuned) {
      b.number("base_lr", row.base_lr, "{:g}");
      b.integer("lr_grid", row.lr_values);
    }
    b.number("peak_lr", row.peak_lr, "{:.4g}");
    b.number(m, mean_of(row.final_metric), "{:.4f}");
    b.number(m + "_sd", row.final_metric.stddev, "{:.4f}");
    b.number("best_" + m, mean_of(row.best_metric), "{:.4f}");
    b.number("gap_acc", mean_of(row.gap_acc), "{:+.4f}");
    b.number("gap_loss", mean_of(row.gap_loss), "{:+.4f}");
    if (tuned) b.number(report.select_by, mean_of(row.selection_metric), "{:.4f}");
    for (size_t t = 0; t < report.targets.size(); ++t) {
      const TargetResult& tr = row.targets[t];
      const std::string& s = suffixes[t];
      b.text("reached" + s, fmt::format("{}/{}", tr.reached, tr.finished));
      b.number("steps" + s, mean_of(tr.steps), "{:.0f}");
      b.number("epochs" + s, mean_of(tr.epochs), "{:.2f}");
      b.number("samples" + s, mean_of(tr.samples), "{:.0f}");
      b.number("train_s" + s, mean_of(tr.train_s), "{:.1f}");
      b.number("gap_acc" + s, mean_of(tr.gap_acc), "{:+.4f}");
    }
    b.integer("diverged", row.diverged);
    std::vector<std::string> notes;
    if (row.failed > 0) notes.push_back(fmt::format("{} failed", row.failed));
    if (row.unfinished > 0) notes.push_back(fmt::format("{} unfinished", row.unfinished));
    if (!row.lr_edge.empty()) notes.push_back("best LR at " + row.lr_edge + " edge");
    if (!row.selection_note.empty()) notes.push_back(row.selection_note);
    if (row.at_chance > 0) notes.push_back(chance_note(row));
    b.text("note", fmt::format("{}", fmt::join(notes, "; ")));
    b.end_row();
  }
  return b.table;
}

std::string chance_note(const ReportRow& row) {
  if (row.at_chance == 0 || !row.chance_acc) return "";
  return fmt::format("{} run{} at or below chance ({:.1f}% test accuracy)", row.at_chance,
                     row.at_chance == 1 ? "" : "s", 100.0 * *row.chance_acc);
}

std::string format_report(const Report& report, results::QueryFormat format) {
  using results::QueryFormat;
  if (format == QueryFormat::kJson) return report_json(report);
  const auto table = report_table(report);
  if (format == QueryFormat::kCsv) return results::format_csv(table);
  std::string out = header(report);
  if (format == QueryFormat::kMarkdown) out += "\n";
  out += results::format_result(table, format, kAbsentCell);
  for (const auto& w : report.warnings) {
    out += fmt::format("{}warning: {}\n", format == QueryFormat::kMarkdown ? "\n" : "", w);
  }
  return out;
}

}  // namespace batchlab::analysis
