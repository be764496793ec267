// The search rules' cost against a plain grid (sweeps/study/search_cost.h): a study recorded with
// race = false over a fake trial source (every point to its target or cap, no stop requests),
// then today's rule, the ladder's budget stop and the later seeds' rerun replayed from it. Each
// rule trains less than the one before, the rerun keeps every best rate, the budget stop leaves
// the rung whose cap is below the steps the rung under it needed, and a raced recording is refused.
#include "sweeps/study/search_cost.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/errors.h"
#include "results/store.h"
#include "sweeps/study/engine.h"
#include "sweeps/study/plan.h"
#include "tests/sweeps/study/fake_source.h"
#include "tests/sweeps/sweep_test_util.h"

namespace batchlab::sweeps::study {
namespace {

using sweeps::testing::FakeTrialSource;
using sweeps::testing::SweepFiles;

// Three seeds, a ladder 64..1024 under a cap of 64,000 samples (1000 steps at 64, 63 at 1024).
std::string cost_spec(const std::string& study_keys, const std::string& ladder_keys) {
  return "schema_version = 1\n[sweep]\nname = \"cost\"\nexperiment = \"base.toml\"\n"
         "seeds = [0, 1, 2]\n[set]\n\"data.val_size\" = 200\n\"data.train_size\" = 4096\n"
         "[study]\ntarget = { metric = \"val_acc\", value = 0.8 }\nmax_samples = 64000\n" +
         study_keys +
         "\n[study.ladder]\nstart = 64\nceiling = 1024\nmin_gain = 1.3\n"
         "flat_doublings = 1\n" +
         ladder_keys + "\n";
}

// Steps to 0.8 at the best rate (0.5, the base experiment's): 40 + 20000 / B (352 at 64, 79 at
// 512, 60 at 1024: every doubling saves more than 1.3x); 1.6x more one grid step away.
double reach_steps(double lr, int64_t batch) {
  const double best = 40.0 + 20000.0 / static_cast<double>(batch);
  return best * (1.0 + 0.6 * std::abs(std::log2(lr / 0.5)));
}

double metric(double lr, int64_t batch, int64_t step) {
  return std::min(0.99, 0.8 * std::sqrt(static_cast<double>(step) / reach_steps(lr, batch)));
}

struct Recording {
  SweepFiles files;
  SweepSpec spec;
  Plan plan;
  StudyPlan study;
  results::Store store;

  explicit Recording(const std::string& study_keys)
      : files(cost_spec(study_keys, "budget_stop = false")),
        spec(files.spec()),
        plan(expand(spec, sweeps::testing::plan_options())),
        study(plan_study(spec, plan, sweeps::testing::plan_options())),
        store(files.dir.file("recorded.db")) {}

  FakeTrialSource run() {
    FakeTrialSource source(2, metric, config::Target{"val_acc", 0.8}, spec.study->evals_per_octave,
                           &store);
    StudyObserver quiet;
    StudyEngine engine(study, store, "cost", source, quiet);
    engine.run();
    return source;
  }
};

TEST(SearchCost, EachRuleTrainsLessThanThePlainGridAndKeepsTheBestRates) {
  Recording plain("race = false");
  const auto source = plain.run();
  EXPECT_TRUE(source.requests.empty()) << "a plain grid stops no trial";
  for (const auto& t : plain.store.read_study_trials("cost")) {
    EXPECT_TRUE(t.outcome == "reached" || t.outcome == "capped") << t.outcome;
  }
  const auto cost = compare_search_rules(plain.spec, plain.plan, sweeps::testing::plan_options(),
                                         plain.store, plain.files.dir.path.string(), 2);
  ASSERT_EQ(cost.rules.size(), 5u);
  const auto& [grid, race, budget, neighbours, rerun] =
      std::tie(cost.rules[0], cost.rules[1], cost.rules[2], cost.rules[3], cost.rules[4]);
  EXPECT_EQ(grid.rule, "plain");
  EXPECT_EQ(rerun.rule, "rerun_best");
  for (const auto& r : cost.rules) EXPECT_EQ(r.missing, 0u) << r.rule;
  // Today's rule runs the plain grid's points, and the race stops the losers at the winner's step.
  EXPECT_EQ(race.trials, grid.trials);
  EXPECT_EQ(race.cells, 15u);  // 5 batches x 3 seeds
  EXPECT_LT(race.samples, grid.samples);
  EXPECT_LT(race.trial_s, grid.trial_s);
  // The budget stop leaves batch 1024 (cap 63 steps < 79 needed at 512) for every seed.
  EXPECT_EQ(budget.cells, 12u);
  EXPECT_LT(budget.samples, race.samples);
  // Neighbours: three points per later seed's cell, the best interior here, so no saving over
  // the search but no extension either.
  EXPECT_EQ(neighbours.trials, 12u * 3u);
  EXPECT_EQ(neighbours.max_lr_move, 0);
  // The rerun: one trial per later seed's cell (every rerun reaches).
  EXPECT_EQ(race.trials, 45u);            // 3 points per cell, the best interior
  EXPECT_EQ(rerun.trials, 4u * 3u + 8u);  // seed 0: 4 cells of 3 points; 8 reruns
  EXPECT_LT(rerun.samples, budget.samples);
  EXPECT_EQ(rerun.max_lr_move, 0);
  ASSERT_TRUE(rerun.steps_ratio_mean.has_value());
  EXPECT_NEAR(*rerun.steps_ratio_mean, 1.0, 1e-12);
  EXPECT_EQ(rerun.moved_over_one, 0u);
  for (const auto& c : cost.cells) {
    ASSERT_EQ(c.best_lr.size(), 5u);
    if (c.batch == 1024) {
      EXPECT_FALSE(c.best_lr[2].has_value()) << "not opened under the budget stop";
      continue;
    }
    ASSERT_TRUE(c.best_lr[1] && c.best_lr[4]) << c.batch << " " << c.seed;
    EXPECT_DOUBLE_EQ(*c.best_lr[4], *c.best_lr[1]);
    EXPECT_DOUBLE_EQ(*c.steps[4], *c.steps[1]) << "a rerun crosses where the search's best did";
  }
}

TEST(SearchCost, ARacedRecordingIsRefusedWithTheKeyThatMakesAPlainOne) {
  Recording raced("race = true");
  raced.run();
  try {
    compare_search_rules(raced.spec, raced.plan, sweeps::testing::plan_options(), raced.store,
                         raced.files.dir.path.string(), 2);
    FAIL() << "a raced recording was accepted";
  } catch (const InputError& e) {
    EXPECT_TRUE(sweeps::testing::contains(e.what(), "not a plain grid")) << e.what();
    EXPECT_TRUE(sweeps::testing::contains(e.what(), "race = false")) << e.what();
  }
}

}  // namespace
}  // namespace batchlab::sweeps::study
