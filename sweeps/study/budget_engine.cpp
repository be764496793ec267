#include "sweeps/study/budget_engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <set>

#include "core/stop_request.h"
#include "sweeps/derived.h"
#include "sweeps/study/budget_decisions.h"

namespace batchlab::sweeps::study {

// In a named namespace, not an anonymous one: BudgetEngine::State, which has external linkage,
// holds these types (GCC's -Wsubobject-linkage).
namespace budget_state {

struct PointTrial {
  Job job;
  size_t cell = 0;
  size_t point = 0;  // its index in the cell's points (0 for a later seed's rerun)
  std::string point_text;
  PointView view;
  bool queued = false;
  bool failed = false;  // its run failed after its retries: not started again by this coordinator
  size_t rung = 0;
};

struct CellRun {
  bool open = false;
  bool complete = false;
  std::vector<int64_t> rungs;
  std::vector<size_t> trials;  // by point
  size_t current_rung = 0;     // the rung its search is at
  results::BudgetCellRow row;
};

}  // namespace budget_state

using budget_state::CellRun;
using budget_state::PointTrial;

namespace {

std::string budget_knobs_text(const std::vector<KnobValues>& knobs) {
  std::string out;
  for (const auto& k : knobs) out += fmt::format("{} = [{}]\n", k.key, fmt::join(k.values, ", "));
  return out;
}

std::optional<double> budget_metric_of(const results::EvalRow& row, const std::string& metric) {
  const auto& v = metric == "val_acc" ? row.val_acc : row.val_loss;
  if (v && std::isfinite(*v)) return v;
  return std::nullopt;
}

}  // namespace

std::vector<int64_t> spread_order(const std::vector<int64_t>& batches) {
  std::vector<int64_t> out;
  if (batches.empty()) return out;
  out.push_back(batches.front());
  if (batches.size() > 1) out.push_back(batches.back());
  std::deque<std::pair<size_t, size_t>> gaps{{0, batches.size() - 1}};
  while (!gaps.empty()) {
    auto [lo, hi] = gaps.front();
    gaps.pop_front();
    if (hi - lo < 2) continue;
    const size_t mid = (lo + hi) / 2;
    out.push_back(batches[mid]);
    gaps.push_back({lo, mid});
    gaps.push_back({mid, hi});
  }
  return out;
}

struct BudgetEngine::State {
  const BudgetPlan& plan;
  results::Store& store;
  std::string sweep_id;
  TrialSource& source;
  BudgetObserver& observer;
  bool lower_is_better;
  std::vector<CellRun> cells;
  std::vector<PointTrial> trials;
  std::map<std::string, size_t> by_run_id;
  std::vector<size_t> rank;  // cell -> its place in the start order
  std::vector<size_t> queue;
  BudgetSummary summary;

  State(const BudgetPlan& p, results::Store& s, std::string id, TrialSource& src, BudgetObserver& o)
      : plan(p),
        store(s),
        sweep_id(std::move(id)),
        source(src),
        observer(o),
        lower_is_better(p.search().metric != "val_acc"),
        cells(p.cells.size()) {}

  // ---- the cells: their rows, their points, the order they run in
  void rank_cells() {
    std::set<int64_t> batches;
    for (size_t c = 0; c < plan.cells.size(); ++c) batches.insert(plan.job(c).global_batch);
    const auto order = spread_order({batches.begin(), batches.end()});
    std::vector<std::tuple<size_t, int, size_t>> keys;
    for (size_t c = 0; c < plan.cells.size(); ++c) {
      const auto at = std::find(order.begin(), order.end(), plan.job(c).global_batch);
      const int searches = plan.cells[c].first_seed ? 0 : 1;  // reruns finish a batch first
      keys.emplace_back(static_cast<size_t>(at - order.begin()), searches, c);
    }
    std::sort(keys.begin(), keys.end());
    rank.assign(plan.cells.size(), 0);
    for (size_t i = 0; i < keys.size(); ++i) rank[std::get<2>(keys[i])] = i;
  }

  results::BudgetCellRow cell_row(size_t c) const {
    const BudgetCell& cell = plan.cells[c];
    const Job& job = plan.job(c);
    results::BudgetCellRow row;
    row.cell_id = cell.cell_id;
    row.sweep_id = sweep_id;
    row.optimizer = job.optimizer;
    row.global_batch = job.global_batch;
    row.seed = job.seed;
    row.cell_toml = cell.cell_toml;
    row.series = cell.series;
    row.budget_steps = cell.budget_steps;
    row.epochs = cell.epochs;
    row.eta = plan.search().eta;
    row.knobs = budget_knobs_text(cell.knobs);
    if (cell.first_seed) row.first_seed_cell = plan.cells[*cell.first_seed].cell_id;
    return row;
  }

  void open_cell(size_t c, const std::vector<BudgetPoint>& points, std::vector<int64_t> rungs) {
    CellRun& run = cells[c];
    run.open = true;
    run.rungs = std::move(rungs);
    run.row = cell_row(c);
    run.row.rung_steps = fmt::format("{}", fmt::join(run.rungs, ","));
    run.row.points = static_cast<int64_t>(points.size());
    for (size_t p = 0; p < points.size(); ++p) {
      PointTrial t;
      t.job = make_budget_trial(plan, c, points[p]);
      t.cell = c;
      t.point = plan.cells[c].first_seed ? 0 : p;
      t.point_text = points[p].describe();
      restore(t);
      run.trials.push_back(trials.size());
      by_run_id[t.job.run_id] = trials.size();
      trials.push_back(std::move(t));
    }
    store.write_budget_cells({run.row});
  }

  // What the database already holds of a point (a resumed search): its run's status, steps and
  // evaluations. A run left `running` by a coordinator that was killed is not running now: it is
  // started again and resumes from its last checkpoint.
  void restore(PointTrial& t) {
    const auto run = store.get_run(t.job.run_id);
    if (!run) return;
    t.view.diverged = run->status == results::run_status::kDiverged;
    t.view.last_step = run->last_step.value_or(0);
    absorb_evals(t, store.read_evals(t.job.run_id));
  }

  void absorb_evals(PointTrial& t, const std::vector<results::EvalRow>& evals) {
    for (const auto& e : evals) {
      if (auto v = budget_metric_of(e, plan.search().metric)) t.view.metric[e.step] = *v;
      t.view.last_step = std::max(t.view.last_step, e.step);
    }
  }

  void open_first_seeds() {
    for (size_t c = 0; c < plan.cells.size(); ++c) {
      if (!plan.cells[c].first_seed) open_cell(c, plan.cells[c].points, plan.cells[c].rung_steps);
    }
  }

  // ---- deciding: each open cell's halving step; a completed first seed opens its later seeds
  void decide() {
    for (size_t c = 0; c < cells.size(); ++c) {
      if (cells[c].open && !cells[c].complete) decide_cell(c);
    }
  }

  void decide_cell(size_t c) {
    CellRun& run = cells[c];
    std::vector<PointView> views;
    for (size_t t : run.trials) views.push_back(trials[t].view);
    const auto step = halving_step(views, run.rungs, plan.search().eta, lower_is_better);
    for (size_t p = 0; p < run.trials.size(); ++p) trials[run.trials[p]].rung = step.last_rung[p];
    run.current_rung = step.rung;
    for (size_t p : step.to_start) enqueue(run.trials[p]);
    if (step.complete) complete_cell(c, step);
  }

  void enqueue(size_t t) {
    PointTrial& trial = trials[t];
    if (trial.queued || trial.failed) return;
    trial.queued = true;
    queue.push_back(t);
  }

  void complete_cell(size_t c, const HalvingStep& step) {
    CellRun& run = cells[c];
    run.complete = true;
    run.row.status =
        std::string(step.best ? results::budget_status::kDone : results::budget_status::kFailed);
    if (step.best) {
      const PointTrial& best = trials[run.trials[*step.best]];
      run.row.best_run_id = best.job.run_id;
      run.row.best_point = best.point_text;
    }
    write_cell(c);
    observer.cell_completed(run.row);
    for (size_t later = 0; later < plan.cells.size(); ++later) {
      if (plan.cells[later].first_seed != c || cells[later].open) continue;
      if (!step.best) {
        cells[later].row = cell_row(later);
        cells[later].row.status = std::string(results::budget_status::kFailed);
        cells[later].open = cells[later].complete = true;
        store.write_budget_cells({cells[later].row});
        continue;
      }
      const BudgetPoint& point = plan.cells[c].points[*step.best];
      open_cell(later, {point}, {plan.cells[later].budget_steps});
    }
  }

  // ---- the records: a cell's row with its budget so far, its points' rows
  // Every point's row, not only the one whose trial ended: a point's outcome (running or halted)
  // follows from the cell's halving decision, which the ended trial may have just changed for all
  // of them. A cell holds at most a few dozen points, so one transaction per ended trial is cheap.
  void write_cell(size_t c) {
    CellRun& run = cells[c];
    run.row.trials = 0;
    run.row.samples_trained = 0;
    std::vector<results::BudgetTrialRow> rows;
    for (size_t t : run.trials) {
      const PointTrial& trial = trials[t];
      if (trial.view.last_step == 0 && !trial.view.running) continue;
      ++run.row.trials;
      run.row.samples_trained +=
          samples_after(trial.job.derived, trial.job.global_batch, trial.view.last_step);
      rows.push_back(trial_row(trial));
    }
    run.row.updated_at.reset();
    store.write_budget_cells({run.row});
    store.write_budget_trials(rows);
  }

  results::BudgetTrialRow trial_row(const PointTrial& t) const {
    const CellRun& run = cells[t.cell];
    results::BudgetTrialRow row;
    row.run_id = t.job.run_id;
    row.cell_id = run.row.cell_id;
    row.point_index = static_cast<int64_t>(t.point);
    row.point = t.point_text;
    row.rung = static_cast<int64_t>(t.rung);
    row.last_step = t.view.last_step;
    row.samples_trained = samples_after(t.job.derived, t.job.global_batch, t.view.last_step);
    const int64_t rung_step = run.rungs[std::min(t.rung, run.rungs.size() - 1)];
    row.metric = value_at(t.view, rung_step);
    if (t.view.diverged) {
      row.outcome = std::string(results::budget_outcome::kDiverged);
    } else if (t.view.last_step >= run.rungs.back()) {
      row.outcome = std::string(results::budget_outcome::kFinished);
    } else if (!run.complete && t.rung == run.current_rung) {
      row.outcome = std::string(
          results::budget_outcome::kRunning);  // climbing, or waiting for its rung's peers
    } else {
      row.outcome = std::string(results::budget_outcome::kHalted);
    }
    return row;
  }

  // ---- trials: the start order, their events
  void launch() {
    std::stable_sort(queue.begin(), queue.end(), [&](size_t a, size_t b) {
      return std::make_pair(rank[trials[a].cell], trials[a].point) <
             std::make_pair(rank[trials[b].cell], trials[b].point);
    });
    while (!queue.empty() && source.running() < source.slots() && !source.stopping()) {
      const size_t t = queue.front();
      queue.erase(queue.begin());
      start(t);
    }
  }

  void start(size_t t) {
    PointTrial& trial = trials[t];
    trial.queued = false;
    trial.view.running = true;
    const CellRun& run = cells[trial.cell];
    const int64_t stop_step = run.rungs[trial.rung];
    std::optional<StopRequest> stop;
    if (stop_step < run.rungs.back())
      stop = StopRequest{std::string(stop_reason::kRung), stop_step};
    source.start(trial.job, stop);
    ++summary.started;
    observer.trial_started(trial.job, trial_row(trial), stop_step);
  }

  void absorb(const SourceEvents& events) {
    for (const auto& u : events.updates) {
      const auto it = by_run_id.find(u.run_id);
      if (it != by_run_id.end()) absorb_evals(trials[it->second], u.evals);
    }
    for (const auto& end : events.ended) {
      const auto it = by_run_id.find(end.run_id);
      if (it == by_run_id.end()) continue;
      PointTrial& t = trials[it->second];
      t.view.running = false;
      t.view.diverged = end.status == results::run_status::kDiverged;
      if (end.last_step) t.view.last_step = std::max(t.view.last_step, *end.last_step);
      absorb_evals(t, end.evals);
      if (end.status == results::run_status::kFailed || end.status == results::run_status::kOom) {
        t.failed = true;
        ++summary.unfinished;
      }
      write_cell(t.cell);
    }
  }

  bool busy() const {
    if (source.running() > 0) return true;
    return !queue.empty() && !source.stopping();
  }

  void summarize() {
    summary.cells = cells.size();
    for (size_t c = 0; c < cells.size(); ++c) {
      const auto& run = cells[c];
      if (!run.complete) {
        ++summary.searching;
      } else if (run.row.status == results::budget_status::kDone) {
        ++summary.done;
      } else {
        ++summary.failed;
      }
      for (size_t t : run.trials) {
        summary.samples_trained += samples_after(trials[t].job.derived, trials[t].job.global_batch,
                                                 trials[t].view.last_step);
      }
    }
    summary.stopped = source.stopping();
  }
};

BudgetEngine::BudgetEngine(const BudgetPlan& plan, results::Store& store, std::string sweep_id,
                           TrialSource& source, BudgetObserver& observer)
    : state_(std::make_unique<State>(plan, store, std::move(sweep_id), source, observer)) {}

BudgetEngine::~BudgetEngine() = default;

BudgetSummary BudgetEngine::run() {
  State& s = *state_;
  s.rank_cells();
  s.open_first_seeds();
  for (;;) {
    s.decide();
    s.launch();
    if (!s.busy()) break;
    s.absorb(s.source.poll());
  }
  for (size_t c = 0; c < s.cells.size(); ++c) {
    if (s.cells[c].open) s.write_cell(c);
  }
  s.summarize();
  return s.summary;
}

}  // namespace batchlab::sweeps::study
