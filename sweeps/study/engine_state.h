// The study engine's state, shared by its two halves: sweeps/study/engine.cpp (resume, trials, the
// run loop) and sweeps/study/engine_cells.cpp (opening, deciding and completing cells). Private to
// sweeps/: only those two files include it.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "sweeps/study/engine.h"
#include "sweeps/study/ladder.h"

namespace batchlab::sweeps::study {

// The engine's bookkeeping, in a named namespace rather than an anonymous one: StudyEngine::State,
// which has external linkage, holds these types (GCC's -Wsubobject-linkage).
namespace engine_state {

enum class Phase { pending, running, ended, failed };

struct Trial {
  Job job;
  size_t cell = 0;
  size_t order = 0;  // its start rank within the cell: a function of lr_index (add_trial)
  Phase phase = Phase::pending;
  TrialView view;
  std::optional<StopRequest> stop;
  results::StudyTrialRow row;
};

struct CellState {
  bool open = false;
  bool complete = false;
  results::StudyCellRow row;
  std::vector<size_t> trials;
};

}  // namespace engine_state

using engine_state::CellState;
using engine_state::Phase;
using engine_state::Trial;

struct StudyEngine::State {
  const StudyPlan& plan;
  results::Store& store;
  std::string sweep_id;
  TrialSource& source;
  StudyObserver& observer;
  config::Target goal;
  std::vector<CellState> cells;
  std::vector<Trial> trials;
  std::map<std::string, size_t> by_run_id;
  StudySummary summary;
  SchedulePolicy policy;
  std::set<std::string> ladder_announced;  // groups whose stop the observer heard of

  State(const StudyPlan& p, results::Store& s, std::string id, TrialSource& src, StudyObserver& o,
        SchedulePolicy order)
      : plan(p),
        store(s),
        sweep_id(std::move(id)),
        source(src),
        observer(o),
        goal(p.study().target),
        cells(p.cells.size()),
        policy(order) {}

  // ---- the trials of a cell, and when they may be pruned
  std::vector<TrialView> views(size_t cell) const;
  size_t position_in_cell(size_t t) const;
  PruneRule prune_rule(size_t c) const;

  // ---- resume: cells and trials as the database holds them
  void load();

  // ---- trials: their events, the race and pruning, the order they start in
  void absorb(const SourceEvents& events);
  void finish(size_t t, const TrialEnd& end);
  void race_and_prune();
  double cell_work(size_t c) const;
  double chain_work(size_t c) const;
  std::optional<size_t> next_pending() const;
  void launch();
  bool can_progress() const;
  void summarize();

  // ---- cells (sweeps/study/engine_cells.cpp)
  CellAnswers answers() const;
  bool ready(size_t c, const CellAnswers& answered) const;
  // The first seed's cell whose best rate `c` starts from (later_seeds other than search).
  std::optional<size_t> rerun_of(size_t c) const;
  void announce_ladder_stops();
  double centre_of(size_t c) const;
  int64_t cap_of(size_t c) const;
  bool open_ready_cells();
  size_t add_trial(size_t c, int64_t lr_index);
  BracketStep bracket_step(size_t c) const;
  void complete_cell(size_t c, size_t best_position);
  bool advance_cells();
  void settle();
};

}  // namespace batchlab::sweeps::study
