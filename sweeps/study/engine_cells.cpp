// The cells of a study: which open (the chain along a line, a batch ladder), their centre and
// cap, the trials their brackets decide, and their completion (sweeps/study/engine_state.h).
#include <fmt/format.h>

#include <cstdlib>

#include "sweeps/study/engine_state.h"

namespace batchlab::sweeps::study {

namespace outcome = results::trial_outcome;
namespace cell_status = results::cell_status;

// Per cell, its row once it has its answer (what the ladder reads).
CellAnswers StudyEngine::State::answers() const {
  CellAnswers out(cells.size(), nullptr);
  for (size_t c = 0; c < cells.size(); ++c) {
    if (cells[c].open && cells[c].complete) out[c] = &cells[c].row;
  }
  return out;
}

// A ladder opens a batch only when the rule allows it, whatever the centre; otherwise a cell
// waits for the batch below it unless lr_center gives every centre.
// Under later_seeds "neighbours" or "rerun_best" a later seed's cell also waits for the first
// seed's cell at its batch, whose best rate it starts from.
bool StudyEngine::State::ready(size_t c, const CellAnswers& answered) const {
  if (const auto first = rerun_of(c); first && !cells[*first].complete) return false;
  if (plan.study().ladder) return ladder_allows(plan, answered, c);
  const auto& previous = plan.cells[c].previous;
  return plan.study().lr_center || !previous || cells[*previous].complete;
}

std::optional<size_t> StudyEngine::State::rerun_of(size_t c) const { return rerun_source(plan, c); }

// Tells the observer once per group when its ladder stops.
void StudyEngine::State::announce_ladder_stops() {
  if (!plan.study().ladder) return;
  const CellAnswers answered = answers();
  for (const auto& cell : plan.cells) {
    if (ladder_announced.count(cell.group) > 0) continue;
    if (auto why = ladder_stop_of(plan, answered, cell.group)) {
      ladder_announced.insert(cell.group);
      observer.ladder_stopped(cell.group, *why);
    }
  }
}

double StudyEngine::State::centre_of(size_t c) const {
  if (const auto first = rerun_of(c); first && cells[*first].row.best_lr) {
    return *cells[*first].row.best_lr;
  }
  if (plan.study().lr_center) return *plan.study().lr_center;
  const auto& previous = plan.cells[c].previous;
  if (previous && cells[*previous].row.best_lr) return *cells[*previous].row.best_lr;
  return plan.job(c).base_lr;
}

int64_t StudyEngine::State::cap_of(size_t c) const {
  std::vector<ReachedPoint> reached, reference;
  for (size_t o = 0; o < cells.size(); ++o) {
    const auto& other = cells[o].row;
    if (!cells[o].complete || other.status != cell_status::kReached) continue;
    const ReachedPoint point{other.global_batch, *other.steps_to_target};
    if (!plan.cells[o].bounded) reference.push_back(point);
    if (plan.cells[o].line == plan.cells[c].line && other.global_batch < plan.job(c).global_batch) {
      reached.push_back(point);
    }
  }
  const int64_t batch = plan.job(c).global_batch;
  const int64_t own = cap_from_fit(reached, batch, plan.cells[c].max_cap_steps);
  if (!plan.cells[c].bounded) return own;
  // The reference lines' cells at every batch count, the larger ones too: a bound from their fit
  // over the whole range is what the comparison at this batch is against.
  const auto bound = reference_cap(reference, batch, plan.study().bound->factor);
  return bound ? std::min(own, *bound) : own;
}

bool StudyEngine::State::open_ready_cells() {
  bool opened = false;
  const CellAnswers answered = answers();
  for (size_t c = 0; c < cells.size(); ++c) {
    if (cells[c].open || !ready(c, answered)) continue;
    opened = true;
    const Job& job = plan.job(c);
    auto& row = cells[c].row;
    row.cell_id = plan.cells[c].cell_id;
    row.sweep_id = sweep_id;
    row.optimizer = job.optimizer;
    row.global_batch = job.global_batch;
    row.seed = job.seed;
    row.cell_toml = plan.cells[c].cell_toml;
    row.target = goal;
    row.lr_center = centre_of(c);
    row.lr_factor = plan.study().lr_factor;
    row.cap_steps = cap_of(c);
    row.warmup_steps =
        make_trial(plan, c, row.lr_center, row.cap_steps).derived.warmup_steps.value_or(0);
    row.status = std::string(cell_status::kSearching);
    store.write_study_cells({row});
    cells[c].open = true;
    observer.cell_opened(row, c);
  }
  return opened;
}

// Adds the trial at `lr_index` to an open cell (the caller records it as decided).
size_t StudyEngine::State::add_trial(size_t c, int64_t lr_index) {
  const auto& cell = cells[c].row;
  Trial trial;
  trial.cell = c;
  // The rank the decisions give it (the centre, then nearer rates, the lower first), a function
  // of lr_index alone: a resumed study, which reads its trials back by lr_index, starts its
  // pending trials in the order an uninterrupted one would.
  trial.order = static_cast<size_t>(2 * std::abs(lr_index) - (lr_index < 0 ? 1 : 0));
  const double lr = lr_at(cell.lr_center, cell.lr_factor, lr_index);
  trial.job = make_trial(plan, c, lr, cell.cap_steps);
  trial.view.lr_index = lr_index;
  trial.row.run_id = trial.job.run_id;
  trial.row.cell_id = cell.cell_id;
  trial.row.base_lr = lr;
  trial.row.lr_index = lr_index;
  trial.row.outcome = std::string(outcome::kRunning);
  trial.row.cap_samples = cell.cap_steps * cell.global_batch;
  if (by_run_id.count(trial.job.run_id) > 0) {
    throw Error(fmt::format("study {}: trial {} decided twice (cell {}, lr_index {})", sweep_id,
                            trial.job.run_id, cell.cell_id, lr_index));
  }
  trials.push_back(std::move(trial));
  const size_t t = trials.size() - 1;
  by_run_id[trials[t].job.run_id] = t;
  cells[c].trials.push_back(t);
  return t;
}

void StudyEngine::State::complete_cell(size_t c, size_t best_position) {
  auto& row = cells[c].row;
  const Trial& best = trials[cells[c].trials[best_position]];
  const auto steps = steps_to_target(best.view.curve, goal);
  row.status = std::string(steps ? cell_status::kReached : cell_status::kCensored);
  row.best_run_id = best.job.run_id;
  row.best_lr = best.row.base_lr;
  row.steps_to_target = steps;
  if (steps) row.samples_to_target = *steps * static_cast<double>(row.global_batch);
  row.updated_at.reset();
  store.write_study_cells({row});
  cells[c].complete = true;
  observer.cell_completed(row, c);
}

// A later seed's cell under later_seeds = "neighbours" runs its three points and no more; under
// "rerun_best" it starts with the first seed's best alone, and stays alone when the first seed's
// cell was censored.
BracketStep StudyEngine::State::bracket_step(size_t c) const {
  const auto first = rerun_of(c);
  const auto mode = first ? plan.study().later_seeds : LaterSeeds::search;
  if (mode == LaterSeeds::neighbours) return next_bracket_step(views(c), goal, 3);
  auto start = BracketStart::three;
  if (mode == LaterSeeds::rerun_best) {
    start = cells[*first].row.status == cell_status::kCensored ? BracketStart::alone
                                                               : BracketStart::one;
  }
  return next_bracket_step(views(c), goal, plan.study().lr_points_max, start);
}

// Cells whose trials all ended decide: more points (recorded together, in one transaction, so
// a resume sees all of them or none), or done.
bool StudyEngine::State::advance_cells() {
  bool changed = false;
  for (size_t c = 0; c < cells.size(); ++c) {
    if (!cells[c].open || cells[c].complete) continue;
    const BracketStep step = bracket_step(c);
    std::vector<results::StudyTrialRow> decided;
    for (int64_t k : step.add) decided.push_back(trials[add_trial(c, k)].row);
    store.write_study_trials(decided);
    if (step.complete) complete_cell(c, *step.best);
    changed = changed || !decided.empty() || step.complete;
  }
  return changed;
}

// Opens and advances cells until nothing changes: a completed cell may open the next one.
void StudyEngine::State::settle() {
  while (open_ready_cells() || advance_cells()) {
  }
  announce_ladder_stops();
}

}  // namespace batchlab::sweeps::study
