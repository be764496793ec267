// The fixed-budget search's coordinator (sweeps/study/budget_engine.h) over a fake trial source:
// curves given by the test, one evaluation every r_0 steps per poll, a stop at a rung keeps the
// run's progress (its checkpoint) and a later start resumes it, as `batchlab train` does.
#include "sweeps/study/budget_engine.h"

#include <gtest/gtest.h>
#include <toml++/toml.h>

#include <cmath>
#include <functional>
#include <map>

#include "results/store.h"
#include "tests/sweeps/sweep_test_util.h"

namespace batchlab::sweeps::study {
namespace budget_engine_test {

using sweeps::testing::plan_options;
using sweeps::testing::SweepFiles;

class ClimbingSource : public TrialSource {
 public:
  // metric(base_lr, seed, step); NaN: the run diverges there.
  using Metric = std::function<double(double, int64_t, int64_t)>;

  ClimbingSource(size_t slots, int64_t every, Metric metric, results::Store& store,
                 size_t stop_after_starts = SIZE_MAX)
      : slots_(slots),
        every_(every),
        metric_(std::move(metric)),
        store_(store),
        stop_after_(stop_after_starts) {}

  size_t slots() const override { return slots_; }
  size_t running() const override { return running_.size(); }
  bool stopping() const override { return starts_total >= stop_after_; }

  void start(const Job& trial, const std::optional<StopRequest>& stop) override {
    Run run{trial, stop, 0, {}};
    // What the run already trained (its checkpoint and records): it goes on from there.
    if (auto row = store_.get_run(trial.run_id)) {
      run.step = row->last_step.value_or(0);
      run.evals = store_.read_evals(trial.run_id);
      EXPECT_NE(row->status, "done") << "a finished run was started again";
    }
    ++starts[trial.run_id];
    ++starts_total;
    if (stop) stops[trial.run_id].push_back(stop->step);
    running_[trial.run_id] = std::move(run);
  }
  void request_stop(const std::string&, const StopRequest&) override {
    ADD_FAILURE() << "a budget search never stops a running trial early";
  }

  SourceEvents poll() override {
    SourceEvents events;
    for (auto it = running_.begin(); it != running_.end();) {
      Run& run = it->second;
      const int64_t total = *run.job.derived.total_steps;
      if (stopping()) {  // the user stopped the search: the trial keeps what it trained
        events.ended.push_back(end(run, "preempted", std::nullopt));
        it = running_.erase(it);
        continue;
      }
      const int64_t step = std::min(total, run.step + every_);
      steps_trained[run.job.run_id] += step - run.step;
      run.step = step;
      const double v = metric_(run.job.base_lr, run.job.seed, step);
      std::string status;
      std::optional<std::string> reason;
      if (std::isnan(v)) {
        status = "diverged";
      } else {
        results::EvalRow row;
        row.run_id = run.job.run_id;
        row.step = step;
        row.val_loss = v;
        row.test_loss = v + 0.1;
        run.evals.push_back(row);
        if (run.stop && step >= run.stop->step) {
          status = "stopped";
          reason = run.stop->reason;
        } else if (step == total) {
          status = "done";
        }
      }
      if (status.empty()) {
        events.updates.push_back({run.job.run_id, run.evals});
        ++it;
        continue;
      }
      events.ended.push_back(end(run, status, reason));
      it = running_.erase(it);
    }
    return events;
  }

  std::map<std::string, int> starts;
  std::map<std::string, std::vector<int64_t>> stops;
  std::map<std::string, int64_t> steps_trained;
  size_t starts_total = 0;

 private:
  struct Run {
    Job job;
    std::optional<StopRequest> stop;
    int64_t step = 0;
    std::vector<results::EvalRow> evals;
  };

  // As the real source's ingest: the run's row and evaluations in the database.
  TrialEnd end(const Run& run, const std::string& status, std::optional<std::string> reason) {
    results::RunRow row;
    row.run_id = run.job.run_id;
    row.status = "running";
    row.optimizer = run.job.optimizer;
    row.global_batch = run.job.global_batch;
    row.seed = run.job.seed;
    row.base_lr = run.job.base_lr;
    store_.upsert_run(row);
    store_.set_run_status(row.run_id, status, std::nullopt, std::nullopt, reason);
    store_.delete_rows_after(row.run_id, -1);
    store_.write_evals(run.evals);
    store_.set_run_progress(row.run_id, run.step, std::nullopt);
    return TrialEnd{run.job.run_id, status, "", reason, run.step, run.evals};
  }

  size_t slots_;
  int64_t every_;
  Metric metric_;
  results::Store& store_;
  size_t stop_after_;
  std::map<std::string, Run> running_;
};

// 1000 synthetic samples at batch 64 (the test plan counts the whole split): 15 steps per epoch,
// 2 epochs = 30 steps, rungs 8, 16, 30.
std::string spec_text(const std::string& seeds) {
  return "schema_version = 1\n[sweep]\nname = \"bs\"\nexperiment = \"base.toml\"\nseeds = " +
         seeds +
         "\n[set]\n\"data.val_size\" = 200\n[grid]\n\"optim.name\" = [\"sgd\"]\n"
         "[search]\nrungs = 3\nlr_points = 4\n";
}

// The loss falls with the steps and is lowest at rate 1 (the points are 0.25, 0.5, 1, 2).
double bowl(double lr, int64_t, int64_t step) {
  return 1.0 + std::abs(std::log2(lr)) + 10.0 / static_cast<double>(step);
}

struct Harness {
  SweepFiles files;
  SweepSpec spec;
  Plan plan;
  BudgetPlan budget;
  results::Store store;

  explicit Harness(const std::string& seeds)
      : files(spec_text(seeds)),
        spec(files.spec()),
        plan(expand(spec, plan_options())),
        budget(plan_budget_search(spec, plan, plan_options())),
        store(files.dir.file("search.db")) {
    results::SweepRow sweep;
    sweep.sweep_id = "bs";
    sweep.name = "bs";
    store.upsert_sweep(sweep);
  }
  BudgetSummary run(ClimbingSource& source) {
    BudgetObserver quiet;
    BudgetEngine engine(budget, store, "bs", source, quiet);
    return engine.run();
  }
};

TEST(BudgetEngine, HalvingFindsTheBestPointAndClimbsWithoutRetrainingAStep) {
  Harness h("[0]");
  ClimbingSource source(2, 8, bowl, h.store);
  const auto summary = h.run(source);
  EXPECT_EQ(summary.done, 1u);
  const auto cells = h.store.read_budget_cells("bs");
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].status, "done");
  ASSERT_TRUE(cells[0].best_point);
  EXPECT_NE(cells[0].best_point->find("optim.base_lr = 1.0\n"), std::string::npos)
      << *cells[0].best_point;
  EXPECT_EQ(cells[0].rung_steps, "8,16,30");
  // 4 points to 8 steps, 2 of them on to 16, 1 on to 30: 32 + 16 + 14 steps of batch 64.
  EXPECT_EQ(cells[0].trials, 4);
  EXPECT_EQ(cells[0].samples_trained, 62 * 64);
  EXPECT_EQ(source.starts_total, 7u);
  // No step is trained twice: each run trained exactly as far as it got.
  for (const auto& t : h.store.read_budget_trials("bs")) {
    EXPECT_EQ(source.steps_trained[t.run_id], t.last_step.value_or(-1)) << t.point;
  }
  // The rungs it stopped at, in order; the winner's last start has no stop (it runs to the end).
  ASSERT_TRUE(cells[0].best_run_id);
  EXPECT_EQ(source.stops[*cells[0].best_run_id], (std::vector<int64_t>{8, 16}));
  EXPECT_EQ(source.starts[*cells[0].best_run_id], 3);
  std::map<std::string, int> outcomes;
  for (const auto& t : h.store.read_budget_trials("bs")) ++outcomes[t.outcome];
  EXPECT_EQ(outcomes["finished"], 1);
  EXPECT_EQ(outcomes["halted"], 3);
}

TEST(BudgetEngine, LaterSeedsRunTheFirstSeedsBestPointForTheWholeBudget) {
  Harness h("[0, 1, 2]");
  ClimbingSource source(2, 8, bowl, h.store);
  const auto summary = h.run(source);
  EXPECT_EQ(summary.done, 3u);
  const auto cells = h.store.read_budget_cells("bs");
  ASSERT_EQ(cells.size(), 3u);
  for (const auto& cell : cells) {
    EXPECT_EQ(cell.status, "done");
    EXPECT_EQ(cell.best_point, cells[0].best_point);
    if (cell.seed == 0) continue;
    EXPECT_EQ(cell.trials, 1);
    EXPECT_EQ(cell.samples_trained, 30 * 64);
    ASSERT_TRUE(cell.first_seed_cell);
    ASSERT_TRUE(cell.best_run_id);
    EXPECT_TRUE(source.stops[*cell.best_run_id].empty());
  }
}

TEST(BudgetEngine, AResumedSearchDecidesTheSameAndTrainsNothingTwice) {
  Harness h("[0, 1]");
  {
    ClimbingSource first(2, 8, bowl, h.store, /*stop_after_starts=*/3);
    const auto summary = h.run(first);
    EXPECT_TRUE(summary.stopped);
    EXPECT_EQ(summary.done, 0u);
  }
  ClimbingSource second(2, 8, bowl, h.store);
  const auto summary = h.run(second);
  EXPECT_EQ(summary.done, 2u);
  Harness fresh("[0, 1]");
  ClimbingSource once(2, 8, bowl, fresh.store);
  fresh.run(once);
  const auto resumed = h.store.read_budget_cells("bs");
  const auto straight = fresh.store.read_budget_cells("bs");
  ASSERT_EQ(resumed.size(), straight.size());
  for (size_t c = 0; c < resumed.size(); ++c) {
    EXPECT_EQ(resumed[c].best_point, straight[c].best_point);
    EXPECT_EQ(resumed[c].samples_trained, straight[c].samples_trained);
  }
}

TEST(BudgetEngine, ACellWhosePointsAllDivergeFailsAndSoDoItsLaterSeeds) {
  Harness h("[0, 1]");
  ClimbingSource source(
      2, 8, [](double, int64_t, int64_t) { return std::nan(""); }, h.store);
  const auto summary = h.run(source);
  EXPECT_EQ(summary.failed, 2u);
  for (const auto& cell : h.store.read_budget_cells("bs")) EXPECT_EQ(cell.status, "failed");
  for (const auto& t : h.store.read_budget_trials("bs")) EXPECT_EQ(t.outcome, "diverged");
}

}  // namespace budget_engine_test
}  // namespace batchlab::sweeps::study
