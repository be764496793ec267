#include "sweeps/study/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "sweeps/study/engine_state.h"

namespace batchlab::sweeps::study {

namespace outcome = results::trial_outcome;
namespace cell_status = results::cell_status;

std::optional<double> study_metric(const results::EvalRow& row, const std::string& metric) {
  const auto& value = metric == "val_loss" ? row.val_loss : row.val_acc;
  if (!value || !std::isfinite(*value)) return std::nullopt;
  return value;
}

Curve curve_of(const std::vector<results::EvalRow>& evals, const std::string& metric) {
  Curve curve;
  for (const auto& e : evals) curve.push_back({e.step, study_metric(e, metric)});
  return curve;
}

namespace {

// The run status and stop reason an outcome stands for, for trials whose outcome was stored (the
// outcomes pruned and stopped_by_race are named after the stop reasons that produce them).
void restore_ending(const std::string& stored, TrialView& view) {
  view.ended = true;
  if (stored == outcome::kDiverged) {
    view.run_status = std::string(results::run_status::kDiverged);
  } else if (stored == outcome::kPruned || stored == outcome::kStoppedByRace) {
    view.run_status = std::string(results::run_status::kStopped);
    view.stop_reason = stored;
  } else {
    view.run_status = std::string(results::run_status::kDone);
  }
}

}  // namespace

std::vector<TrialView> StudyEngine::State::views(size_t cell) const {
  std::vector<TrialView> out;
  for (size_t t : cells[cell].trials) out.push_back(trials[t].view);
  return out;
}

size_t StudyEngine::State::position_in_cell(size_t t) const {
  const auto& list = cells[trials[t].cell].trials;
  return static_cast<size_t>(std::find(list.begin(), list.end(), t) - list.begin());
}

// When a trial of cell `c` may be pruned: the cell's warmup and the spec's fair-run rule.
PruneRule StudyEngine::State::prune_rule(size_t c) const {
  return PruneRule{cells[c].row.warmup_steps, plan.study().prune_min_evals,
                   plan.study().prune_min_fraction};
}

void StudyEngine::State::load() {
  std::map<std::string, results::StudyCellRow> stored_cells;
  for (auto& row : store.read_study_cells(sweep_id)) stored_cells[row.cell_id] = row;
  std::map<std::string, size_t> cell_index;
  for (size_t c = 0; c < plan.cells.size(); ++c) {
    cell_index[plan.cells[c].cell_id] = c;
    auto it = stored_cells.find(plan.cells[c].cell_id);
    if (it == stored_cells.end()) continue;
    cells[c].open = true;
    cells[c].row = it->second;
    cells[c].complete = it->second.status != cell_status::kSearching;
    // A spec that added an axis at the value the cell ran with keeps its id (the id hashes the
    // resolved config): its stored coordinates follow the spec, or the report would split the
    // line between the cells recorded before the axis and those opened after.
    if (cells[c].row.cell_toml != plan.cells[c].cell_toml) {
      cells[c].row.cell_toml = plan.cells[c].cell_toml;
      store.write_study_cells({cells[c].row});
    }
  }
  for (auto& row : store.read_study_trials(sweep_id)) {
    auto it = cell_index.find(row.cell_id);
    if (it == cell_index.end() || !cells[it->second].open) continue;
    const size_t t = add_trial(it->second, row.lr_index);
    Trial& trial = trials[t];
    if (trial.job.run_id != row.run_id) {
      throw Error(fmt::format(
          "study {}: stored trial {} of cell {} does not match the spec's trial {} at "
          "lr_index {}; the base experiment changed under the study (use a new sweep name)",
          sweep_id, row.run_id, row.cell_id, trial.job.run_id, row.lr_index));
    }
    trial.row = row;
    if (row.outcome == outcome::kRunning) continue;  // runs again (or is found ended)
    trial.phase = Phase::ended;
    restore_ending(row.outcome, trial.view);
    trial.view.curve = curve_of(store.read_evals(row.run_id), goal.metric);
  }
}

void StudyEngine::State::absorb(const SourceEvents& events) {
  for (const auto& u : events.updates) {
    auto it = by_run_id.find(u.run_id);
    if (it != by_run_id.end()) trials[it->second].view.curve = curve_of(u.evals, goal.metric);
  }
  for (const auto& end : events.ended) {
    auto it = by_run_id.find(end.run_id);
    if (it != by_run_id.end()) finish(it->second, end);
  }
}

void StudyEngine::State::finish(size_t t, const TrialEnd& end) {
  Trial& trial = trials[t];
  trial.view.curve = curve_of(end.evals, goal.metric);
  trial.view.ended = true;
  trial.view.run_status = end.status;
  trial.view.stop_reason = end.stop_reason;
  const auto result = trial_outcome(trial.view, goal);
  if (!result) {
    // No result: a crash after its retries or a stop the study did not ask for (the cell waits
    // for a rerun of the study), or an interruption (it runs again).
    trial.view.ended = false;
    const bool again =
        end.status != results::run_status::kFailed && end.status != results::run_status::kStopped;
    trial.phase = again ? Phase::pending : Phase::failed;
    observer.trial_interrupted(trial.job, end, trial.cell);
    return;
  }
  trial.phase = Phase::ended;
  auto& row = trial.row;
  const int64_t batch = trial.job.global_batch;
  const int64_t trained =
      end.last_step.value_or(trial.view.curve.empty() ? 0 : trial.view.curve.back().step);
  row.outcome = *result;
  // The updates it trained, as samples_trained counts them: a diverged run stops between
  // evaluations, and its last evaluation would understate what it cost.
  row.last_step =
      end.last_step || !trial.view.curve.empty() ? std::optional<int64_t>(trained) : std::nullopt;
  row.steps_to_target = steps_to_target(trial.view.curve, goal);
  row.samples_trained = trained * batch;
  row.reason = end.error.empty() ? std::nullopt : std::optional<std::string>(end.error);
  if (*result == outcome::kCapped) {
    row.reason = fmt::format("ran to the cap ({} steps) without reaching the target",
                             cells[trial.cell].row.cap_steps);
  }
  row.decided_at.reset();
  store.write_study_trials({row});
  observer.trial_ended(trial.job, row, trial.cell);
}

// The race and pruning for every running trial; a request is only ever made earlier.
void StudyEngine::State::race_and_prune() {
  if (!plan.study().race) return;  // the plain grid: every trial to its target or cap
  for (size_t c = 0; c < cells.size(); ++c) {
    const auto& list = cells[c].trials;
    if (list.empty()) continue;
    const auto all = views(c);
    for (size_t i = 0; i < list.size(); ++i) {
      Trial& trial = trials[list[i]];
      if (trial.phase != Phase::running) continue;
      auto request = race_stop(all, i, goal);
      auto pruned = prune_stop(all, i, goal, prune_rule(c));
      if (pruned && (!request || pruned->step < request->step)) request = pruned;
      if (!request || (trial.stop && trial.stop->step <= request->step)) continue;
      trial.stop = request;
      source.request_stop(trial.job.run_id, *request);
      observer.stop_requested(trial.job, *request);
    }
  }
}

// Expected samples of a cell's first bracket (3 trials at its cap, 1 for a rerun: the stored cap
// once open, the cap it would get now otherwise).
double StudyEngine::State::cell_work(size_t c) const {
  const int64_t cap = cells[c].open ? cells[c].row.cap_steps : cap_of(c);
  const double first_trials =
      rerun_of(c) && plan.study().later_seeds == LaterSeeds::rerun_best ? 1.0 : 3.0;
  return first_trials * static_cast<double>(cap) * static_cast<double>(plan.job(c).global_batch);
}

// The expected work of `c` and of every unfinished cell above it in its line.
double StudyEngine::State::chain_work(size_t c) const {
  double work = 0.0;
  for (size_t o = 0; o < cells.size(); ++o) {
    if (plan.cells[o].line != plan.cells[c].line || cells[o].complete ||
        plan.job(o).global_batch < plan.job(c).global_batch) {
      continue;
    }
    work += cell_work(o);
  }
  return work;
}

std::optional<size_t> StudyEngine::State::next_pending() const {
  std::vector<size_t> ids;
  std::vector<PendingTrial> pending;
  std::map<size_t, double> chains;  // per cell: computed once per call
  for (size_t t = 0; t < trials.size(); ++t) {
    if (trials[t].phase != Phase::pending) continue;
    const size_t c = trials[t].cell;
    if (policy == SchedulePolicy::shortest_study && chains.count(c) == 0) {
      chains[c] = chain_work(c);
    }
    ids.push_back(t);
    pending.push_back({c, trials[t].order, chains[c],
                       static_cast<double>(cells[c].row.cap_steps * cells[c].row.global_batch)});
  }
  const auto next = next_trial(pending, policy);
  return next ? std::optional<size_t>(ids[*next]) : std::nullopt;
}

void StudyEngine::State::launch() {
  while (!source.stopping() && source.running() < source.slots()) {
    const auto t = next_pending();
    if (!t) return;
    Trial& trial = trials[*t];
    // A trial that starts after another of its cell reached starts with the race's stop in place
    // (none in the plain grid of race = false).
    if (plan.study().race) trial.stop = race_stop(views(trial.cell), position_in_cell(*t), goal);
    trial.phase = Phase::running;
    ++summary.started;
    observer.trial_started(trial.job, trial.row, trial.cell);
    source.start(trial.job, trial.stop);
  }
}

bool StudyEngine::State::can_progress() const {
  if (source.running() > 0) return true;
  // Whether any trial waits, not which one starts next (next_pending weighs every chain).
  return !source.stopping() && std::any_of(trials.begin(), trials.end(), [](const Trial& t) {
    return t.phase == Phase::pending;
  });
}

void StudyEngine::State::summarize() {
  summary.cells = cells.size();
  summary.trials = trials.size();
  summary.stopped = source.stopping();
  std::vector<results::StudyCellRow> opened;  // the rows recorded so far
  for (const auto& c : cells) {
    if (c.open) opened.push_back(c.row);
  }
  const auto beyond = cells_beyond_ladder(plan, opened);
  for (size_t i = 0; i < cells.size(); ++i) {
    const auto& c = cells[i];
    if (c.complete && c.row.status == cell_status::kReached) ++summary.reached;
    if (c.complete && c.row.status == cell_status::kCensored) ++summary.censored;
    if (c.complete) continue;
    if (beyond.count(plan.cells[i].cell_id) > 0) {
      ++summary.beyond_ladder;
    } else {
      ++summary.searching;
    }
  }
  for (const auto& t : trials) {
    if (t.phase == Phase::failed) ++summary.unfinished;
    summary.samples_trained += t.row.samples_trained.value_or(0);
    summary.cap_samples += t.row.cap_samples.value_or(0);
  }
}

StudyEngine::StudyEngine(const StudyPlan& plan, results::Store& store, std::string sweep_id,
                         TrialSource& source, StudyObserver& observer, SchedulePolicy policy)
    : state_(std::make_unique<State>(plan, store, std::move(sweep_id), source, observer, policy)) {}

StudyEngine::~StudyEngine() = default;

StudySummary StudyEngine::run() {
  State& s = *state_;
  s.load();
  while (true) {
    s.settle();
    s.launch();
    if (!s.can_progress()) break;
    s.absorb(s.source.poll());
    s.race_and_prune();
  }
  s.summarize();
  return s.summary;
}

}  // namespace batchlab::sweeps::study
