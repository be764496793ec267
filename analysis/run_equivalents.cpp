#include "analysis/run_equivalents.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "analysis/study_report.h"
#include "analysis/table_builder.h"

namespace batchlab::analysis {

namespace {

using Key = std::pair<std::string, int64_t>;  // series, batch

// The samples of one run of `cell`: its winning trial's, or one run to the cap when censored.
void set_unit(const StudyCellSummary& cell, RunEquivalents& row) {
  if (cell.cell.status == "reached" && cell.cell.best_run_id) {
    for (const auto& t : cell.trials) {
      if (t.run_id == *cell.cell.best_run_id && t.samples_trained) row.unit = *t.samples_trained;
    }
    if (!row.unit && cell.cell.samples_to_target) {
      row.unit = static_cast<int64_t>(*cell.cell.samples_to_target);
    }
    return;
  }
  if (cell.cell.status != "censored") return;
  for (const auto& t : cell.trials) {
    if (t.cap_samples) row.unit = *t.cap_samples;
  }
  row.unit_is_cap = row.unit.has_value();
}

int64_t trained(const StudyCellSummary& cell) {
  int64_t sum = 0;
  for (const auto& t : cell.trials) sum += t.samples_trained.value_or(0);
  return sum;
}

}  // namespace

std::vector<RunEquivalents> run_equivalents(const std::vector<StudyCellSummary>& cells) {
  std::map<Key, std::vector<const StudyCellSummary*>> groups;
  std::vector<std::string> order;
  for (const auto& c : cells) {
    auto& members = groups[{c.series, c.cell.global_batch}];
    if (std::find(order.begin(), order.end(), c.series) == order.end()) order.push_back(c.series);
    members.push_back(&c);
  }
  std::vector<RunEquivalents> out;
  for (const auto& series : order) {
    for (const auto& [key, members] : groups) {
      if (key.first != series) continue;
      RunEquivalents row;
      row.series = series;
      row.batch = key.second;
      std::set<int64_t> seeds;
      for (const auto* c : members) seeds.insert(c->cell.seed);
      row.first_seed = *seeds.begin();
      row.seeds = static_cast<int>(seeds.size());
      for (const auto* c : members) {
        const bool first = c->cell.seed == row.first_seed;
        if (first && !row.unit) set_unit(*c, row);
        row.all_trials += c->lr_points;
        row.all_samples += trained(*c);
        if (!first) continue;
        row.first_trials += c->lr_points;
        row.first_samples += trained(*c);
      }
      if (row.all_trials == 0) continue;  // a table of steps (--steps-csv) ran no trials
      if (row.unit && *row.unit > 0) {
        row.first = static_cast<double>(row.first_samples) / static_cast<double>(*row.unit);
        row.all = static_cast<double>(row.all_samples) / static_cast<double>(*row.unit);
      }
      out.push_back(std::move(row));
    }
  }
  return out;
}

results::QueryResult run_equivalents_table(const std::vector<RunEquivalents>& rows) {
  TableBuilder b;
  for (const auto& r : rows) {
    b.text("series", r.series);
    b.integer("batch", r.batch);
    b.integer("seeds", r.seeds);
    b.integer("trials_first_seed", r.first_trials);
    b.integer("trials_all_seeds", r.all_trials);
    b.number("runs_first_seed", r.first, "{:.2f}");
    b.number("runs_all_seeds", r.all, "{:.2f}");
    b.text("unit", !r.unit ? "" : r.unit_is_cap ? "a run to the cap (censored)" : "the winner");
    b.end_row();
  }
  return b.table;
}

}  // namespace batchlab::analysis
