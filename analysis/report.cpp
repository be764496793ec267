#include "analysis/report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "analysis/run_records.h"
#include "core/errors.h"

namespace batchlab::analysis {

namespace {

// Orders group keys numerically where both values are numbers ("512" before "4096").
bool key_less(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i] == b[i]) continue;
    const auto x = to_number(a[i]);
    const auto y = to_number(b[i]);
    if (x && y && *x != *y) return *x < *y;
    return a[i] < b[i];
  }
  return a.size() < b.size();
}

std::string lr_text(double lr) { return fmt::format("{:g}", lr); }

struct Group {
  std::vector<std::string> key;
  std::vector<const RunRecord*> runs;
};

std::optional<double> selection_value(const RunRecord& r, const std::string& select_by) {
  return select_by == "val_acc" ? r.final_val_acc : r.final_val_loss;
}

// When the done runs first reached one target.
TargetResult summarize_target(const std::vector<const RunRecord*>& done, const config::Target& t) {
  TargetResult tr;
  tr.finished = static_cast<int>(done.size());
  std::vector<double> steps, epochs, samples, secs, gaps;
  for (const RunRecord* r : done) {
    for (const MilestoneRecord& m : r->milestones) {
      if (m.metric != t.metric || m.target != t.value) continue;
      ++tr.reached;
      if (m.step) steps.push_back(*m.step);
      if (m.epoch) epochs.push_back(*m.epoch);
      if (m.samples) samples.push_back(*m.samples);
      if (m.train_s) secs.push_back(*m.train_s);
      if (m.gap_acc) gaps.push_back(*m.gap_acc);
    }
  }
  tr.steps = Stat::of(steps);
  tr.epochs = Stat::of(epochs);
  tr.samples = Stat::of(samples);
  tr.train_s = Stat::of(secs);
  tr.gap_acc = Stat::of(gaps);
  return tr;
}

// Fills the metric columns from the done runs of the selected learning rate.
void summarize(const std::vector<const RunRecord*>& selected, const ReportOptions& options,
               const std::vector<config::Target>& targets, ReportRow& row) {
  const bool higher_better = options.metric == "test_acc";
  std::vector<double> final_v, best_v, gap_acc, gap_loss, peak, chosen_on, train_s;
  std::vector<const RunRecord*> done;
  for (const RunRecord* r : selected) {
    if (r->status != "done") continue;
    done.push_back(r);
    const auto f = higher_better ? r->final_acc : r->final_loss;
    const auto b = higher_better ? r->best_acc : r->best_loss;
    if (f) final_v.push_back(*f);
    if (b) best_v.push_back(*b);
    if (r->final_gap_acc) gap_acc.push_back(*r->final_gap_acc);
    if (r->final_gap_loss) gap_loss.push_back(*r->final_gap_loss);
    if (const auto v = selection_value(*r, options.select_by)) chosen_on.push_back(*v);
    if (r->train_s) train_s.push_back(*r->train_s);
    if (r->chance_acc && r->final_acc && *r->final_acc <= *r->chance_acc) {
      ++row.at_chance;
      row.chance_acc = r->chance_acc;
    }
  }
  for (const RunRecord* r : selected) {
    if (r->peak_lr) peak.push_back(*r->peak_lr);
  }
  row.final_metric = Stat::of(final_v);
  row.best_metric = Stat::of(best_v);
  row.gap_acc = Stat::of(gap_acc);
  row.gap_loss = Stat::of(gap_loss);
  row.selection_metric = Stat::of(chosen_on);
  row.train_s = Stat::of(train_s);
  if (!peak.empty()) row.peak_lr = Stat::of(peak).mean;
  for (const config::Target& t : targets) row.targets.push_back(summarize_target(done, t));
}

std::string describe(const std::vector<std::string>& names, const std::vector<std::string>& key) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < names.size(); ++i) parts.push_back(names[i] + "=" + key[i]);
  return fmt::format("{}", fmt::join(parts, " "));
}

void check_options(const ReportOptions& options) {
  if (options.metric != "test_acc" && options.metric != "test_loss") {
    throw InputError(fmt::format("--metric {}: use test_acc or test_loss", options.metric));
  }
  check_selection_metric(options.select_by);
  if (options.group_by.empty()) throw InputError("--group-by: give at least one key");
}

// Every target found in the runs' milestones or declared in their configs.
std::vector<config::Target> collect_targets(const std::vector<RunRecord>& records) {
  std::set<config::Target> targets;
  for (const auto& r : records) {
    for (const auto& m : r.milestones) targets.insert({m.metric, m.target});
    targets.insert(r.declared_targets.begin(), r.declared_targets.end());
  }
  return {targets.begin(), targets.end()};
}

// Constant group-by keys are hidden; so are descriptive columns that never change.
void find_constants(const std::vector<RunRecord>& records, const ReportOptions& options,
                    Report& report) {
  report.key_shown.assign(options.group_by.size(), true);
  if (records.empty()) return;
  for (size_t k = 0; k < options.group_by.size(); ++k) {
    const bool constant = std::all_of(records.begin(), records.end(), [&](const RunRecord& r) {
      return r.key[k] == records.front().key[k];
    });
    if (constant && records.size() > 1) {
      report.key_shown[k] = false;
      report.constants.emplace_back(options.group_by[k], records.front().key[k]);
    }
  }
  for (const auto& descriptor : records.front().descriptors) {
    // Named references, not structured bindings: a lambda capturing a binding is C++20 that clang
    // accepts only from 16 on, and the fuzzing build (docs/fuzzing.md) uses clang 14.
    const std::string& name = descriptor.first;
    const std::string& first = descriptor.second;
    if (std::find(options.group_by.begin(), options.group_by.end(), name) !=
        options.group_by.end()) {
      continue;
    }
    const bool constant = std::all_of(records.begin(), records.end(), [&](const RunRecord& r) {
      return r.descriptors.at(name) == first;
    });
    if (constant && !first.empty()) report.constants.emplace_back(name, first);
  }
}

std::vector<Group> group_runs(const std::vector<RunRecord>& records) {
  std::vector<Group> groups;
  std::map<std::vector<std::string>, size_t> where_is;
  for (const auto& r : records) {
    auto [it, fresh] = where_is.emplace(r.key, groups.size());
    if (fresh) groups.push_back({r.key, {}});
    groups[it->second].runs.push_back(&r);
  }
  std::sort(groups.begin(), groups.end(),
            [](const Group& a, const Group& b) { return key_less(a.key, b.key); });
  return groups;
}

using RunsByLr = std::map<double, std::vector<const RunRecord*>>;

// Counts runs, seeds and statuses; returns the runs by base LR (runs without one go to `no_lr`).
RunsByLr count_runs(const Group& g, ReportRow& row, std::vector<const RunRecord*>& no_lr) {
  row.key = g.key;
  row.runs = static_cast<int>(g.runs.size());
  std::set<int64_t> seeds;
  RunsByLr by_lr;
  for (const RunRecord* r : g.runs) {
    row.run_ids.push_back(r->run_id);
    ++row.statuses[r->status];
    if (r->seed) seeds.insert(*r->seed);
    if (r->status == "done") {
      ++row.done;
    } else if (r->status == "diverged") {
      ++row.diverged;
    } else if (r->status == "failed" || r->status == "oom") {
      ++row.failed;
    } else {
      ++row.unfinished;
    }
    (r->base_lr ? by_lr[*r->base_lr] : no_lr).push_back(r);
  }
  row.seeds = static_cast<int>(seeds.size());
  row.lr_values = static_cast<int>(by_lr.size());
  return by_lr;
}

// The best LR: the best mean validation metric over that LR's finished runs. One LR needs no
// choice; several LRs without validation rows get none, and the row's note says why.
std::optional<double> select_lr(const RunsByLr& by_lr, const std::string& select_by,
                                ReportRow& row) {
  if (by_lr.size() == 1) return by_lr.begin()->first;
  const bool higher_better = select_by == "val_acc";
  std::optional<double> best_lr;
  double best_score = 0.0;
  for (const auto& [lr, runs] : by_lr) {
    std::vector<double> values;
    for (const RunRecord* r : runs) {
      const auto v = selection_value(*r, select_by);
      if (r->status == "done" && v) values.push_back(*v);
    }
    if (values.empty()) continue;
    const double score = Stat::of(values).mean;
    if (!best_lr || (higher_better ? score > best_score : score < best_score)) {
      best_lr = lr;
      best_score = score;
    }
  }
  if (!best_lr) row.selection_note = fmt::format("no LR selected: no {}", select_by);
  return best_lr;
}

// Flags a best LR at the edge of the grid, where the optimum may lie outside it.
void flag_edge(const RunsByLr& by_lr, double best_lr, const std::string& group, ReportRow& row,
               std::vector<std::string>& warnings) {
  if (by_lr.size() < 2) return;
  const double low = by_lr.begin()->first;
  const double high = by_lr.rbegin()->first;
  if (best_lr != low && best_lr != high) return;
  row.lr_edge = best_lr == low ? "low" : "high";
  std::vector<std::string> grid;
  for (const auto& entry : by_lr) grid.push_back(lr_text(entry.first));
  warnings.push_back(
      fmt::format("{}: the best base_lr {} is the {} of the grid {{{}}}; the optimum may lie "
                  "outside it, extend "
                  "the grid",
                  group, lr_text(best_lr), row.lr_edge == "low" ? "smallest" : "largest",
                  fmt::join(grid, ", ")));
}

ReportRow summarize_group(const Group& g, const ReportOptions& options, Report& report) {
  ReportRow row;
  std::vector<const RunRecord*> selected;  // runs without a base LR always count
  RunsByLr by_lr = count_runs(g, row, selected);
  if (const auto best_lr = select_lr(by_lr, options.select_by, row)) {
    row.base_lr = best_lr;
    const auto& runs = by_lr[*best_lr];
    selected.insert(selected.end(), runs.begin(), runs.end());
    flag_edge(by_lr, *best_lr, describe(options.group_by, g.key), row, report.warnings);
  } else if (!row.selection_note.empty()) {
    report.warnings.push_back(fmt::format(
        "{}: no LR selected among {} base LRs: no finished run has validation rows ({}); hold out "
        "a validation split with data.val_size (test metrics are only reported, never used to "
        "choose)",
        describe(options.group_by, g.key), by_lr.size(), options.select_by));
  }
  summarize(selected, options, report.targets, row);
  return row;
}

}  // namespace

void check_selection_metric(const std::string& name) {
  if (name == "val_acc" || name == "val_loss") return;
  const bool held_out_elsewhere = name.rfind("test_", 0) == 0 || name.rfind("train_", 0) == 0;
  throw InputError(fmt::format(
      "--select-by {}: {}the best LR is chosen on held-out validation data; use a val_ metric "
      "(val_acc or val_loss), and give runs a validation split with data.val_size (examples of "
      "the training set held out)",
      name, held_out_elsewhere ? "selecting on a test or training metric is refused: " : ""));
}

Stat Stat::of(const std::vector<double>& values) {
  Stat s;
  s.n = static_cast<int>(values.size());
  if (s.n == 0) return s;
  double sum = 0.0;
  for (double v : values) sum += v;
  s.mean = sum / s.n;
  if (s.n >= 2) {
    double ss = 0.0;
    for (double v : values) ss += (v - s.mean) * (v - s.mean);
    s.stddev = std::sqrt(ss / (s.n - 1));
  }
  return s;
}

Report build_report(const std::string& db_path, const ReportOptions& options) {
  check_options(options);
  const auto records =
      read_run_records(db_path, options.group_by, RunFilter{options.where, options.sweep_id});
  Report report;
  report.group_by = options.group_by;
  report.metric = options.metric;
  report.select_by = options.select_by;
  report.total_runs = static_cast<int>(records.size());
  report.targets = collect_targets(records);
  find_constants(records, options, report);
  for (const Group& g : group_runs(records)) {
    report.rows.push_back(summarize_group(g, options, report));
  }
  return report;
}

}  // namespace batchlab::analysis
