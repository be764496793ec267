#include "cli/sweep_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "cli/sweep_context.h"
#include "results/query.h"
#include "results/query_result.h"

namespace batchlab::cli {

namespace {

struct RunResult {
  std::string status;
  std::optional<double> test_acc;
  std::optional<double> gap_acc;
  std::optional<double> gap_loss;
  std::optional<double> train_s;
  std::optional<double> target_s;  // training clock when the target was first reached
};

std::optional<double> number(const std::optional<std::string>& cell) {
  if (!cell) return std::nullopt;
  try {
    return std::stod(*cell);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

struct Mean {
  double sum = 0.0;
  int n = 0;
  void add(const std::optional<double>& v) {
    if (v) {
      sum += *v;
      ++n;
    }
  }
  std::string text(const char* spec) const {
    return n == 0 ? "-" : fmt::format(fmt::runtime(spec), sum / n);
  }
};

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::string sweep_report(const std::string& db_path, const sweeps::Plan& plan) {
  std::error_code ec;
  if (!std::filesystem::exists(db_path, ec)) return "";
  const std::string sweep = quote(plan.sweep_name);
  // The last evaluation of each run is its final one.
  const auto runs = results::query_readonly(
      db_path,
      "SELECT r.run_id, r.status, r.train_s, e.test_acc, e.gap_acc, e.gap_loss FROM runs r "
      "LEFT JOIN evals e ON e.run_id = r.run_id AND e.step = "
      "(SELECT max(step) FROM evals WHERE run_id = r.run_id) WHERE r.sweep_id = " +
          sweep);
  const auto milestones = results::query_readonly(
      db_path,
      "SELECT m.run_id, m.metric, m.target, m.wall_s FROM milestones m JOIN runs r "
      "ON r.run_id = m.run_id WHERE r.sweep_id = " +
          sweep);
  std::map<std::string, RunResult> by_id;
  for (const auto& row : runs.rows) {
    RunResult r;
    r.status = row[1].value_or("");
    r.train_s = number(row[2]);
    r.test_acc = number(row[3]);
    r.gap_acc = number(row[4]);
    r.gap_loss = number(row[5]);
    by_id.emplace(row[0].value_or(""), r);
  }
  std::map<std::string, const sweeps::Job*> job_of;
  for (const auto& job : plan.jobs) job_of[job.run_id] = &job;
  for (const auto& row : milestones.rows) {
    auto job = job_of.find(row[0].value_or(""));
    auto run = by_id.find(row[0].value_or(""));
    if (job == job_of.end() || run == by_id.end()) continue;
    const auto target = number(row[2]);
    if (row[1].value_or("") == job->second->target_metric && target &&
        std::abs(*target - job->second->target_value) < 1e-12) {
      run->second.target_s = number(row[3]);
    }
  }

  // One row per combination of the swept keys other than the seed, in plan order (a spec that
  // sweeps the optimizer, then the batch size, reads as a table per optimizer and batch).
  std::vector<size_t> key_columns;
  for (size_t k = 0; k < plan.coordinate_keys.size(); ++k) {
    if (plan.coordinate_keys[k] != "train.seed") key_columns.push_back(k);
  }
  std::vector<std::vector<std::string>> order;
  std::map<std::vector<std::string>, std::vector<const sweeps::Job*>> groups;
  for (const auto& job : plan.jobs) {
    std::vector<std::string> key;
    for (size_t k : key_columns) key.push_back(job.coordinates[k]);
    auto& members = groups[key];
    if (members.empty()) order.push_back(key);
    members.push_back(&job);
  }
  // optimizer and batch lead; other swept keys follow (optim.name and batch.global are those two).
  std::vector<size_t> shown;
  for (size_t i = 0; i < key_columns.size(); ++i) {
    const auto& name = plan.coordinate_keys[key_columns[i]];
    if (name != "optim.name" && name != "batch.global") shown.push_back(i);
  }
  results::QueryResult table;
  using VT = results::ValueType;
  std::vector<VT> types = {VT::kText, VT::kInteger};
  table.columns = {"optimizer", "batch"};
  for (size_t i : shown) {
    table.columns.push_back(plan.coordinate_keys[key_columns[i]]);
    types.push_back(VT::kText);
  }
  for (const char* c : {"peak_lr", "runs", "test_acc", "gap_acc", "gap_loss", "time_to_target",
                        "train_s", "note"}) {
    table.columns.emplace_back(c);
  }
  for (VT t :
       {VT::kReal, VT::kText, VT::kReal, VT::kReal, VT::kReal, VT::kText, VT::kText, VT::kText}) {
    types.push_back(t);
  }
  std::set<std::string> targets;
  size_t finished_runs = 0;
  for (const auto& key : order) {
    const auto& jobs = groups[key];
    Mean acc, gap, gap_loss, to_target, train_s;
    std::map<std::string, int> statuses;
    int reached = 0, finished = 0;
    for (const auto* job : jobs) {
      if (!job->target_metric.empty()) {
        targets.insert(fmt::format("{} >= {}", job->target_metric, job->target_value));
      }
      auto it = by_id.find(job->run_id);
      const std::string status = it == by_id.end() ? "planned" : it->second.status;
      ++statuses[status];
      if (status != "done") continue;
      ++finished;
      const auto& r = it->second;
      acc.add(r.test_acc);
      gap.add(r.gap_acc);
      gap_loss.add(r.gap_loss);
      train_s.add(r.train_s);
      if (r.target_s) {
        ++reached;
        to_target.add(r.target_s);
      }
    }
    finished_runs += finished;
    std::string note;
    for (const auto& [status, n] : statuses) {
      if (status == "done") continue;
      note += fmt::format("{}{} {}", note.empty() ? "" : ", ", n, status);
    }
    std::string target_text = "-";
    if (reached > 0) {
      target_text = format_seconds(to_target.sum / to_target.n);
      if (reached < finished) target_text += fmt::format(" ({}/{} runs)", reached, finished);
    } else if (finished > 0 && !jobs.front()->target_metric.empty()) {
      target_text = "not reached";
    }
    std::vector<std::optional<std::string>> row = {jobs.front()->optimizer,
                                                   std::to_string(jobs.front()->global_batch)};
    for (size_t i : shown) row.emplace_back(key[i]);
    for (auto& cell : std::vector<std::string>{
             fmt::format("{:.4g}", jobs.front()->derived.peak_lr),
             fmt::format("{}/{}", finished, jobs.size()), acc.text("{:.4f}"), gap.text("{:+.4f}"),
             gap_loss.text("{:+.4f}"), target_text,
             train_s.n ? format_seconds(train_s.sum / train_s.n) : "-", note}) {
      row.emplace_back(std::move(cell));
    }
    table.rows.push_back(std::move(row));
    table.types.push_back(types);
  }
  if (finished_runs == 0) return "";
  std::string target_list;
  for (const auto& t : targets) target_list += (target_list.empty() ? "" : ", ") + t;
  return fmt::format(
      "Results of sweep {} (means over seeds of the final evaluation; gap_acc = train_acc - "
      "test_acc; times on the training clock{}):\n{}",
      plan.sweep_name, target_list.empty() ? "" : "; target " + target_list,
      results::format_table(table));
}

}  // namespace batchlab::cli
