// The coordinator of a fixed-budget search ([search], sweeps/study/budget_plan.h): runs every first
// seed's cell by successive halving through a TrialSource, then each later seed's cell as one run
// of the first seed's best point, and records cells and points in the budget tables of the sweep
// database.
//
// A point climbs rung by rung as one run: it is started with the stop request `rung r_k`
// (core/stop_request.h), stops at the evaluation at r_k keeping its weights in a checkpoint, and,
// if promoted, is started again with the request for r_{k+1}; the trainer resumes it from that
// checkpoint (the same run id, the same schedule), so the search costs what the rungs train and no
// step is trained twice.
//
// Resume: the decisions are pure functions of the points' evaluations and run statuses
// (sweeps/study/budget_decisions.h), and the trial configs and run ids are the plan's, so a new
// coordinator over the same database decides the same promotions and runs only what is missing.
//
// Cells run in the order that measures the batch range soonest: batches from the ends inwards
// (smallest, largest, middle, ...), a later seed's rerun before the next batch's search.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "results/rows.h"
#include "results/store.h"
#include "sweeps/study/budget_plan.h"
#include "sweeps/study/engine.h"

namespace batchlab::sweeps::study {

class BudgetObserver {
 public:
  virtual ~BudgetObserver() = default;
  virtual void trial_started(const Job&, const results::BudgetTrialRow&, int64_t /*stop_step*/) {}
  virtual void cell_completed(const results::BudgetCellRow&) {}
};

struct BudgetSummary {
  size_t cells = 0, done = 0, failed = 0, searching = 0;
  size_t started = 0;     // trial starts by this run (a promoted point counts once per rung)
  size_t unfinished = 0;  // trials whose run failed: their cells cannot finish in this run
  int64_t samples_trained = 0;
  bool stopped = false;
};

// The order in which batches are measured: ends first, then the middles of the gaps (breadth
// first), so a stopped search has measured the widest range it could. `batches` ascending.
std::vector<int64_t> spread_order(const std::vector<int64_t>& batches);

class BudgetEngine {
 public:
  BudgetEngine(const BudgetPlan& plan, results::Store& store, std::string sweep_id,
               TrialSource& source, BudgetObserver& observer);
  ~BudgetEngine();
  BudgetEngine(const BudgetEngine&) = delete;
  BudgetEngine& operator=(const BudgetEngine&) = delete;

  BudgetSummary run();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace batchlab::sweeps::study
