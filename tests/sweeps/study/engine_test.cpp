// The study engine over a fake trial source (curves given by the test, no training): the race
// stops the right trials at the right step, pruning waits for warmup and spares trials within 2x,
// the bracket extends from an edge and stops, cells chain their centres along the batch, and a new
// engine over the same database (a resumed study) runs nothing twice.
#include "sweeps/study/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "results/store.h"
#include "tests/sweeps/study/fake_source.h"
#include "tests/sweeps/sweep_test_util.h"

namespace batchlab::sweeps::study {
namespace {

using sweeps::testing::eval_grid;
using sweeps::testing::FakeTrialSource;
using sweeps::testing::SweepFiles;

// The synthetic base's optim.base_lr is 0.5: the first centre.
std::string spec_text(const std::string& grid, const std::string& study) {
  return "schema_version = 1\n[sweep]\nname = \"st\"\nexperiment = \"base.toml\"\n"
         "[set]\n\"data.val_size\" = 200\n[grid]\n" +
         grid + "\n[study]\ntarget = { metric = \"val_acc\", value = 0.8 }\n" + study + "\n";
}

// A metric curve reaching 0.8 at step R: 0.8 * sqrt(step / R), at most 0.99.
double sqrt_curve(double reach_step, int64_t step) {
  return std::min(0.99, 0.8 * std::sqrt(static_cast<double>(step) / reach_step));
}

struct Harness {
  SweepFiles files;
  SweepSpec spec;
  Plan plan;
  StudyPlan study;
  results::Store store;

  Harness(const std::string& grid, const std::string& study_keys)
      : files(spec_text(grid, study_keys)),
        spec(files.spec()),
        plan(expand(spec, sweeps::testing::plan_options())),
        study(plan_study(spec, plan, sweeps::testing::plan_options())),
        store(files.dir.file("study.db")) {}

  StudySummary run(FakeTrialSource& source) {
    StudyObserver quiet;
    StudyEngine engine(study, store, "st", source, quiet);
    return engine.run();
  }
  FakeTrialSource source(size_t slots, FakeTrialSource::Metric metric) {
    return FakeTrialSource(slots, std::move(metric), config::Target{"val_acc", 0.8},
                           spec.study->evals_per_octave, &store);
  }
  std::map<double, results::StudyTrialRow> trials_by_lr() {
    std::map<double, results::StudyTrialRow> out;
    for (auto& t : store.read_study_trials("st")) out[t.base_lr] = t;
    return out;
  }
  // The first grid step at or past `step`.
  int64_t eval_at_or_after(double step, int64_t cap) const {
    for (int64_t s : eval_grid(cap, spec.study->evals_per_octave)) {
      if (static_cast<double>(s) >= step) return s;
    }
    return cap;
  }
};

TEST(StudyEngine, TheRaceStopsEveryOtherTrialAtTheLeadersCrossing) {
  Harness h("\"batch.global\" = [64]", "max_steps = 1000\nwarmup = 0.9");  // no pruning
  // The centre (0.5) reaches at step 100; its neighbours would need 150 and 180.
  auto source = h.source(1, [](double lr, int64_t, int64_t step) {
    const double reach = lr == 0.5 ? 100.0 : lr == 1.0 ? 150.0 : 180.0;
    return sqrt_curve(reach, step);
  });
  const auto summary = h.run(source);
  EXPECT_EQ(summary.reached, 1u);
  ASSERT_EQ(source.start_order.size(), 3u);
  auto trials = h.trials_by_lr();
  ASSERT_EQ(trials.size(), 3u);
  EXPECT_EQ(source.start_order[0], trials[0.5].run_id) << "the centre runs first";
  const double s_star = trials[0.5].steps_to_target.value();
  EXPECT_GT(s_star, 90.0);
  EXPECT_LE(s_star, 100.0);
  EXPECT_EQ(trials[0.5].outcome, "reached");
  for (double lr : {0.25, 1.0}) {
    const auto& t = trials[lr];
    EXPECT_EQ(t.outcome, "stopped_by_race") << lr;
    // Started after the leader reached: the request was in place from its first step.
    ASSERT_EQ(source.requests[t.run_id].size(), 1u) << lr;
    EXPECT_EQ(source.requests[t.run_id][0].step, static_cast<int64_t>(std::ceil(s_star)));
    EXPECT_EQ(source.last_step[t.run_id], h.eval_at_or_after(std::ceil(s_star), 1000)) << lr;
    EXPECT_EQ(t.samples_trained, source.last_step[t.run_id] * 64);
    EXPECT_EQ(t.cap_samples, 1000 * 64);
  }
  const auto cells = h.store.read_study_cells("st");
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].status, "reached");
  EXPECT_EQ(cells[0].best_lr, 0.5);
  EXPECT_EQ(cells[0].steps_to_target, s_star);
  EXPECT_EQ(cells[0].samples_to_target, s_star * 64);
  EXPECT_LT(summary.samples_trained * 3, summary.cap_samples);
}

TEST(StudyEngine, ConcurrentTrialsAreStoppedAtTheirNextEvaluation) {
  Harness h("\"batch.global\" = [64]", "max_steps = 1000\nwarmup = 0.9");
  // Three at once, in lockstep: when the centre reaches, the others get the request and stop at
  // their next evaluation, which is the first at or past ceil(S*) on the shared grid.
  auto source = h.source(3, [](double lr, int64_t, int64_t step) {
    return sqrt_curve(lr == 0.5 ? 100.0 : 400.0, step);
  });
  h.run(source);
  auto trials = h.trials_by_lr();
  const double s_star = trials[0.5].steps_to_target.value();
  for (double lr : {0.25, 1.0}) {
    EXPECT_EQ(trials[lr].outcome, "stopped_by_race");
    const int64_t reached_at = h.eval_at_or_after(s_star, 1000);
    EXPECT_EQ(source.last_step[trials[lr].run_id],
              h.eval_at_or_after(static_cast<double>(reached_at) + 1, 1000));
  }
}

TEST(StudyEngine, PruningWaitsForAFairRunAndSparesTrialsWithinTwoX) {
  // Cap 1000, warmup 5% = 50 steps. The centre reaches at 100; 0.25 is 4x slower (pruned), 1.0 is
  // 1.5x slower (never pruned: stopped by the race). By default the slow trial is pruned at its
  // third evaluation past warmup (and past half of the leader's 100 steps); with the image study's
  // rule (prune_min_evals = 0, prune_min_fraction = 0) at its first evaluation after warmup.
  for (const bool fair : {true, false}) {
    Harness h("\"batch.global\" = [64]",
              fair ? "max_steps = 1000"
                   : "max_steps = 1000\nprune_min_evals = 0\nprune_min_fraction = 0");
    auto source = h.source(3, [](double lr, int64_t, int64_t step) {
      return sqrt_curve(lr == 0.5 ? 100.0 : lr == 0.25 ? 400.0 : 150.0, step);
    });
    h.run(source);
    auto trials = h.trials_by_lr();
    EXPECT_EQ(h.store.read_study_cells("st")[0].warmup_steps, 50);
    const auto& slow = trials[0.25];
    EXPECT_EQ(slow.outcome, "pruned");
    ASSERT_FALSE(source.requests[slow.run_id].empty());
    const auto& request = source.requests[slow.run_id].front();
    EXPECT_EQ(request.reason, "pruned");
    const int64_t first = h.eval_at_or_after(51, 1000);
    const int64_t third = h.eval_at_or_after(h.eval_at_or_after(first + 1, 1000) + 1, 1000);
    EXPECT_EQ(request.step, fair ? third : first)
        << (fair ? "the third" : "the first") << " evaluation after warmup";
    const auto& close = trials[1.0];
    EXPECT_EQ(close.outcome, "stopped_by_race");
    for (const auto& r : source.requests[close.run_id]) EXPECT_NE(r.reason, "pruned");
  }
}

TEST(StudyEngine, TheBracketExtendsFromAnEdgeUntilTheBestIsInterior) {
  // Steps to target fall with the rate up to 2.0 and rise after it: 0.5 -> 400, 1 -> 200,
  // 2 -> 100, 4 -> 200. Centre 0.5: the best is at the high edge twice, then interior.
  Harness h("\"batch.global\" = [64]", "max_steps = 4000\nwarmup = 0.9");
  auto source = h.source(1, [](double lr, int64_t, int64_t step) {
    return sqrt_curve(100.0 * std::max(2.0 / lr, lr / 2.0), step);
  });
  const auto summary = h.run(source);
  auto trials = h.trials_by_lr();
  std::vector<double> lrs;
  for (const auto& [lr, t] : trials) lrs.push_back(lr);
  EXPECT_EQ(lrs, (std::vector<double>{0.25, 0.5, 1.0, 2.0, 4.0}));
  EXPECT_EQ(trials[2.0].lr_index, 2);
  EXPECT_EQ(summary.trials, 5u);
  const auto cell = h.store.read_study_cells("st")[0];
  EXPECT_EQ(cell.status, "reached");
  EXPECT_EQ(cell.best_lr, 2.0);
  EXPECT_EQ(cell.best_run_id, trials[2.0].run_id);
}

TEST(StudyEngine, TheBracketStopsAtLrPointsMaxAndACellWithoutAReachIsCensored) {
  Harness h("\"batch.global\" = [64]", "max_steps = 300\nlr_points_max = 4\nwarmup = 0.9");
  // Nobody reaches within 300 steps; the metric improves with the rate (0.25 -> 0.3, 2 -> 0.6).
  auto source = h.source(1, [](double lr, int64_t, int64_t step) {
    return 0.2 + 0.1 * std::log2(lr / 0.125) * std::min(1.0, static_cast<double>(step) / 100.0);
  });
  const auto summary = h.run(source);
  EXPECT_EQ(summary.trials, 4u);
  EXPECT_EQ(summary.censored, 1u);
  auto trials = h.trials_by_lr();
  for (const auto& [lr, t] : trials) EXPECT_EQ(t.outcome, "capped") << lr;
  EXPECT_EQ(trials.rbegin()->first, 2.0) << "extended upwards once, to 4 points";
  const auto cell = h.store.read_study_cells("st")[0];
  EXPECT_EQ(cell.status, "censored");
  EXPECT_FALSE(cell.steps_to_target.has_value());
  EXPECT_EQ(cell.best_lr, 2.0);
}

TEST(StudyEngine, DivergedTrialsAreRecordedAndTheBracketGoesDown) {
  Harness h("\"batch.global\" = [64]", "max_steps = 1000\nwarmup = 0.9");
  // Rates of 1.0 and more diverge; 0.25 is best.
  auto source = h.source(1, [](double lr, int64_t, int64_t step) {
    if (lr >= 1.0 && step >= 4) return std::nan("");
    return sqrt_curve(100.0 * std::max(0.25 / lr, lr / 0.25), step);
  });
  h.run(source);
  auto trials = h.trials_by_lr();
  EXPECT_EQ(trials[1.0].outcome, "diverged");
  EXPECT_EQ(trials[1.0].reason, "loss is nan");
  // It stopped at the step it diverged at, after its last evaluation: last_step and
  // samples_trained both count the updates it trained.
  ASSERT_TRUE(trials[1.0].last_step && trials[1.0].samples_trained);
  EXPECT_EQ(*trials[1.0].last_step, source.last_step.at(trials[1.0].run_id));
  EXPECT_EQ(*trials[1.0].samples_trained, *trials[1.0].last_step * 64);
  const auto evals = h.store.read_evals(trials[1.0].run_id);
  ASSERT_FALSE(evals.empty());
  EXPECT_LT(evals.back().step, *trials[1.0].last_step);
  EXPECT_EQ(trials[0.25].outcome, "reached");
  ASSERT_TRUE(trials.count(0.125)) << "best at the low edge: extended down";
  EXPECT_EQ(h.store.read_study_cells("st")[0].best_lr, 0.25);
}

TEST(StudyEngine, CellsTakeTheirCentreFromTheNextSmallerBatch) {
  Harness h("\"batch.global\" = [64, 128]", "max_samples = 64000\nwarmup = 0.9");
  // Batch 64 is best at 1.0 (found by extending); batch 128 starts there.
  auto source = h.source(1, [](double lr, int64_t batch, int64_t step) {
    const double best = batch == 64 ? 1.0 : 2.0;
    return sqrt_curve(100.0 * std::max(best / lr, lr / best), step);
  });
  h.run(source);
  const auto cells = h.store.read_study_cells("st");
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(cells[0].global_batch, 64);
  EXPECT_EQ(cells[0].lr_center, 0.5);
  EXPECT_EQ(cells[0].cap_steps, 1000);
  EXPECT_EQ(cells[0].best_lr, 1.0);
  EXPECT_EQ(cells[1].global_batch, 128);
  EXPECT_EQ(cells[1].lr_center, 1.0);
  EXPECT_EQ(cells[1].cap_steps, 500);  // 64000 samples / 128
  EXPECT_EQ(cells[1].best_lr, 2.0);
  EXPECT_NE(cells[0].cell_id, cells[1].cell_id);
}

TEST(StudyEngine, ANewEngineOverTheSameDatabaseRunsNothingAgain) {
  Harness h("\"batch.global\" = [64, 128]", "max_samples = 64000\nwarmup = 0.9");
  auto metric = [](double lr, int64_t batch, int64_t step) {
    const double best = batch == 64 ? 1.0 : 0.5;
    return sqrt_curve(100.0 * std::max(best / lr, lr / best), step);
  };
  auto first = h.source(2, metric);
  const auto a = h.run(first);
  auto second = h.source(2, metric);
  const auto b = h.run(second);
  EXPECT_EQ(b.started, 0u);
  EXPECT_TRUE(second.start_order.empty());
  EXPECT_EQ(a.trials, b.trials);
  EXPECT_EQ(a.samples_trained, b.samples_trained);
  EXPECT_EQ(b.reached, 2u);
  for (const auto& [id, n] : first.starts) EXPECT_EQ(n, 1) << id;
}

// A spec that adds an axis at the value the recorded cells ran with keeps their ids (the resolved
// config is the same), so a resumed study finds them (issue 43: the text study's always_adapt
// axis). Their stored coordinates must then name the axis as the cells opened after do, or the
// report splits one line into two series (the old LARS cells at 16-32 apart from the new at 64).
TEST(StudyEngine, ACellKeptByASpecThatAddedAnAxisTakesTheSpecsCoordinates) {
  Harness h("\"batch.global\" = [64]\n\"optim.base_batch\" = [256]",
            "max_steps = 1000\nwarmup = 0.9");
  auto metric = [](double lr, int64_t, int64_t step) {
    return sqrt_curve(lr == 0.5 ? 100.0 : 300.0, step);
  };
  auto first = h.source(1, metric);
  h.run(first);
  // As recorded before the spec had the axis.
  auto cell = h.store.read_study_cells("st").at(0);
  const std::string with_axis = cell.cell_toml;
  const std::string line = "\"optim.base_batch\" = 256\n";
  ASSERT_NE(with_axis.find(line), std::string::npos) << with_axis;
  cell.cell_toml.erase(cell.cell_toml.find(line), line.size());
  h.store.write_study_cells({cell});

  auto resumed = h.source(1, metric);
  EXPECT_EQ(h.run(resumed).started, 0u);
  EXPECT_EQ(h.store.read_study_cells("st").at(0).cell_toml, with_axis);
}

TEST(StudyEngine, ATrialDecidedButNotFinishedRunsAgainOnResume) {
  Harness h("\"batch.global\" = [64]", "max_steps = 1000\nwarmup = 0.9");
  auto metric = [](double lr, int64_t, int64_t step) {
    return sqrt_curve(lr == 0.5 ? 100.0 : 300.0, step);
  };
  auto complete = h.source(1, metric);
  h.run(complete);
  // As if the coordinator died before recording the last trial's end: it is `running` again.
  auto rows = h.store.read_study_trials("st");
  ASSERT_EQ(rows.size(), 3u);
  auto& last = rows.back();
  const std::string id = last.run_id;
  last.outcome = "running";
  last.steps_to_target.reset();
  h.store.write_study_trials({last});
  auto cell = h.store.read_study_cells("st")[0];
  cell.status = "searching";
  h.store.write_study_cells({cell});

  auto resumed = h.source(1, metric);
  const auto summary = h.run(resumed);
  EXPECT_EQ(resumed.start_order, (std::vector<std::string>{id})) << "only the unfinished trial";
  EXPECT_EQ(summary.reached, 1u);
  EXPECT_EQ(h.store.read_study_trials("st").size(), 3u);
}

}  // namespace
}  // namespace batchlab::sweeps::study
