#include "sweeps/study/replay.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "core/errors.h"
#include "sweeps/study/engine.h"

namespace batchlab::sweeps::study {

namespace {

namespace outcome = results::trial_outcome;

// One stored trial: its whole curve and when each evaluation arrived.
struct TimedTrial {
  TrialView view;  // the whole recorded curve
  std::vector<double> times;
};

TimedTrial timed_trial(results::Store& store, const results::StudyTrialRow& row,
                       const std::string& metric) {
  const auto run = store.get_run(row.run_id);
  const auto start = run && run->started_at ? results::utc_seconds(*run->started_at) : std::nullopt;
  if (!start) {
    throw InputError(
        fmt::format("study trial {}: its run has no readable runs.started_at, so "
                    "its evaluations cannot be put in time order",
                    row.run_id));
  }
  TimedTrial t;
  t.view.lr_index = row.lr_index;
  const auto evals = store.read_evals(row.run_id);
  t.view.curve = curve_of(evals, metric);
  for (const auto& e : evals) t.times.push_back(*start + e.wall_s);
  return t;
}

// What the coordinator knew at `time`: every trial's evaluations up to then.
std::vector<TrialView> known_at(const std::vector<TimedTrial>& trials, double time) {
  std::vector<TrialView> out;
  for (const auto& t : trials) {
    TrialView v = t.view;
    const auto n = std::upper_bound(t.times.begin(), t.times.end(), time) - t.times.begin();
    v.curve.resize(static_cast<size_t>(n));
    out.push_back(std::move(v));
  }
  return out;
}

PrunedTrialReplay replay_trial(const std::vector<TimedTrial>& trials, size_t i,
                               const results::StudyTrialRow& row, const config::Target& goal,
                               const PruneRule& rule) {
  PrunedTrialReplay p;
  p.run_id = row.run_id;
  p.lr_index = row.lr_index;
  p.recorded_step = row.last_step.value_or(0);
  for (const auto& e : trials[i].view.curve) p.steps.push_back(e.step);
  std::vector<double> moments;
  for (const auto& t : trials) moments.insert(moments.end(), t.times.begin(), t.times.end());
  std::sort(moments.begin(), moments.end());
  const auto& own = trials[i];
  for (double now : moments) {
    if (own.times.empty() || now > own.times.back()) break;  // past the record of this trial
    const auto request = prune_stop(known_at(trials, now), i, goal, rule);
    if (!request) continue;
    p.decided_step = request->step;
    for (size_t k = 0; k < own.times.size(); ++k) {
      if (own.times[k] > now && own.view.curve[k].step >= request->step) {
        p.stop_step = own.view.curve[k].step;
        break;
      }
    }
    if (!p.stop_step && own.view.curve.back().step >= request->step) {
      p.stop_step = own.view.curve.back().step;  // decided on its very last evaluation
    }
    break;
  }
  return p;
}

CellReplay replay_cell(results::Store& store, const results::StudyCellRow& cell,
                       const std::vector<results::StudyTrialRow>& rows, const PruneRule& rule) {
  CellReplay out;
  out.cell_id = cell.cell_id;
  out.optimizer = cell.optimizer;
  out.global_batch = cell.global_batch;
  out.seed = cell.seed;
  std::vector<TimedTrial> trials;
  for (const auto& row : rows) {
    trials.push_back(timed_trial(store, row, cell.target.metric));
    if (cell.best_run_id && row.run_id == *cell.best_run_id) out.best_lr_index = row.lr_index;
  }
  const config::Target& goal = cell.target;
  PruneRule prune = rule;
  prune.warmup_steps = cell.warmup_steps;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].outcome != outcome::kPruned) continue;
    PrunedTrialReplay p = replay_trial(trials, i, rows[i], goal, prune);
    p.next_to_best = out.best_lr_index && std::llabs(p.lr_index - *out.best_lr_index) == 1;
    out.pruned.push_back(p);
  }
  return out;
}

}  // namespace

bool CellReplay::open() const {
  return std::any_of(pruned.begin(), pruned.end(),
                     [](const PrunedTrialReplay& p) { return !p.decided_step.has_value(); });
}

std::vector<CellReplay> replay_pruning(results::Store& store,
                                       const std::optional<std::string>& sweep_id,
                                       const PruneRule& rule) {
  const auto trials = store.read_study_trials(sweep_id);
  std::vector<CellReplay> out;
  for (const auto& cell : store.read_study_cells(sweep_id)) {
    std::vector<results::StudyTrialRow> rows;
    for (const auto& t : trials) {
      if (t.cell_id == cell.cell_id) rows.push_back(t);
    }
    CellReplay replay = replay_cell(store, cell, rows, rule);
    if (!replay.pruned.empty()) out.push_back(std::move(replay));
  }
  return out;
}

}  // namespace batchlab::sweeps::study
