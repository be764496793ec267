// The batch ladder ([study.ladder], docs/sweeps.md "Batch ladder"): its keys and their errors at
// spec reading, the rule (results/batch_ladder.h), and the coordinator over a fake trial source
// stopping a ladder by each of its three reasons, moving seeds together and resuming to the same
// cells.
#include "sweeps/study/ladder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "results/batch_ladder.h"
#include "results/store.h"
#include "sweeps/study/engine.h"
#include "tests/sweeps/study/fake_source.h"
#include "tests/sweeps/sweep_test_util.h"

namespace batchlab::sweeps::study {
namespace {

using results::LadderRule;
using results::LadderRung;
using results::LadderStop;
using sweeps::testing::config_error;
using sweeps::testing::contains;
using sweeps::testing::FakeTrialSource;
using sweeps::testing::SweepFiles;

// Lines 1..7 fixed ([sweep] seeds on line 5), `extra` on line 8, [study] on line 9, [study.ladder]
// on line 12, its keys from line 13 on.
std::string ladder_spec(const std::string& ladder, const std::string& extra = "",
                        const std::string& seeds = "[0]") {
  return "schema_version = 1\n[sweep]\nname = \"ladder\"\nexperiment = \"base.toml\"\nseeds = " +
         seeds + "\n[set]\n\"data.val_size\" = 200\n" + extra +
         "\n[study]\ntarget = { metric = \"val_acc\", value = 0.8 }\nmax_steps = 1000\n"
         "[study.ladder]\n" +
         ladder + "\n";
}

// ---- spec reading

TEST(StudyLadderSpec, ReadsTheKeysAndPlansEveryBatchFromStartToCeiling) {
  SweepFiles files(ladder_spec("start = 32\nceiling = 256"));
  const auto spec = files.spec();
  ASSERT_TRUE(spec.study && spec.study->ladder);
  EXPECT_EQ(spec.study->ladder->start, 32);
  EXPECT_EQ(spec.study->ladder->ceiling, 256);
  EXPECT_DOUBLE_EQ(spec.study->ladder->min_gain, 1.3);
  EXPECT_EQ(spec.study->ladder->flat_doublings, 2);
  const auto plan = files.plan();
  std::vector<int64_t> batches;
  for (const auto& job : plan.jobs) batches.push_back(job.global_batch);
  EXPECT_EQ(batches, (std::vector<int64_t>{32, 64, 128, 256}));
  SweepFiles given(ladder_spec("start = 64\nceiling = 512\nmin_gain = 1.5\nflat_doublings = 1"));
  const auto s = given.spec();
  EXPECT_DOUBLE_EQ(s.study->ladder->min_gain, 1.5);
  EXPECT_EQ(s.study->ladder->flat_doublings, 1);
}

TEST(StudyLadderSpec, EveryBadKeyIsNamedWithItsPositionAtOnce) {
  SweepFiles files(
      ladder_spec("start = 512\nceiling = 256\nmin_gain = 1.0\nflat_doublings = 0\nstep = 2"));
  const auto message = config_error([&] { files.spec(); });
  EXPECT_TRUE(contains(message,
                       "spec.toml:14:11: study.ladder.ceiling = 256: must be above "
                       "start (512)"))
      << message;
  EXPECT_TRUE(contains(message,
                       "spec.toml:15:12: study.ladder.min_gain = 1.0: must be a number "
                       "> 1"))
      << message;
  EXPECT_TRUE(contains(message,
                       "spec.toml:16:18: study.ladder.flat_doublings = 0: must be an "
                       "integer in [1, 20]"))
      << message;
  EXPECT_TRUE(contains(message, "spec.toml:17:1: study.ladder.step = 2: unknown key")) << message;
  SweepFiles censored(ladder_spec("start = 32\nceiling = 256\ncensored_rungs = 4"));
  EXPECT_TRUE(contains(config_error([&] { censored.spec(); }),
                       "spec.toml:15:18: study.ladder.censored_rungs = 4: must be an integer in "
                       "[0, 3]"));
  SweepFiles negative(ladder_spec("start = 32\nceiling = 256\ncensored_rungs = -1"));
  EXPECT_TRUE(contains(config_error([&] { negative.spec(); }), "censored_rungs = -1: must be"));
}

TEST(StudyLadderSpec, ACeilingThatIsNotAPowerOfTwoMultipleGetsTheNearestValidOnes) {
  SweepFiles files(ladder_spec("start = 256\nceiling = 3000"));
  const auto message = config_error([&] { files.spec(); });
  EXPECT_TRUE(contains(message,
                       "spec.toml:14:11: study.ladder.ceiling = 3000: must be start x "
                       "2^k, a power-of-two multiple of start (256): nearest 2048 or "
                       "4096"))
      << message;
  SweepFiles deep(ladder_spec("start = 32\nceiling = 256\nflat_doublings = 4"));
  EXPECT_TRUE(contains(config_error([&] { deep.spec(); }),
                       "study.ladder.flat_doublings = 4: must be an integer in [1, 3]"));
  SweepFiles missing(ladder_spec("start = 32"));
  EXPECT_TRUE(contains(config_error([&] { missing.spec(); }),
                       "spec.toml:12:1: study.ladder.ceiling: missing"));
  SweepFiles both(ladder_spec("start = 0"));
  const auto two = config_error([&] { both.spec(); });
  EXPECT_TRUE(contains(two, "spec.toml:13:9: study.ladder.start = 0: must be a batch size")) << two;
  EXPECT_TRUE(contains(two, "study.ladder.ceiling: missing")) << two;
}

TEST(StudyLadderSpec, ALadderAndABatchListTogetherAreAnError) {
  SweepFiles grid(ladder_spec("start = 32\nceiling = 256", "[grid]\n\"batch.global\" = [64, 128]"));
  EXPECT_TRUE(contains(config_error([&] { grid.spec(); }),
                       "spec.toml:9:1: batch.global: the batches come from [study.ladder]"));
  SweepFiles set(ladder_spec("start = 32\nceiling = 256", "\"batch.global\" = 64"));
  EXPECT_TRUE(contains(config_error([&] { set.spec(); }),
                       "[set] batch.global = 64: the batches come from [study.ladder]"));
}

// ---- the rule

LadderRule rule_of(int64_t ceiling, double min_gain, int64_t flat_doublings) {
  LadderRule rule;
  rule.ceiling = ceiling;
  rule.min_gain = min_gain;
  rule.flat_doublings = flat_doublings;
  return rule;
}

LadderRung make_rung(int64_t batch, std::vector<std::optional<double>> steps) {
  return LadderRung{batch, std::move(steps)};
}

TEST(StudyLadderRule, StopsAfterFlatDoublingsInARowAndNamesThem) {
  const LadderRule rule = rule_of(4096, 1.3, 2);
  // 1.5x, then 1.2x (one flat doubling), then 1.5x again (the count restarts), then 1.2x, 1.1x.
  std::vector<LadderRung> rungs = {make_rung(256, {900}), make_rung(512, {600}),
                                   make_rung(1024, {500}), make_rung(2048, {333.3}),
                                   make_rung(4096, {300})};
  auto v = results::walk_ladder(rungs, rule);
  EXPECT_EQ(v.stop, LadderStop::ceiling) << "one flat doubling, then a good one, then one flat";
  rungs = {make_rung(256, {900}), make_rung(512, {600}), make_rung(1024, {500}),
           make_rung(2048, {450})};
  v = results::walk_ladder(rungs, rule);
  EXPECT_EQ(v.stop, LadderStop::flattening);
  EXPECT_EQ(v.rungs, 4u);
  EXPECT_EQ(results::describe_ladder_stop(v, rungs, rule),
            "flattening (1024->2048 saved 1.11x, 512->1024 1.20x < 1.3x)");
  rungs.pop_back();
  EXPECT_EQ(results::walk_ladder(rungs, rule).stop, LadderStop::none) << "may go on";
}

TEST(StudyLadderRule, ACensoredSeedStopsTheLadderAndSeedsAreAveragedGeometrically) {
  const LadderRule rule = rule_of(4096, 1.3, 1);
  std::vector<LadderRung> rungs = {make_rung(256, {400, 100}), make_rung(512, {std::nullopt, 90})};
  auto v = results::walk_ladder(rungs, rule);
  EXPECT_EQ(v.stop, LadderStop::cap);
  EXPECT_EQ(results::describe_ladder_stop(v, rungs, rule),
            "cap (batch 512: 1 of 2 seeds did not reach the target within the cap)");
  // Geometric mean 200, then 100: 2x (the arithmetic mean would say 250 -> 100, 2.5x).
  rungs = {make_rung(256, {400, 100}), make_rung(512, {100, 100})};
  v = results::walk_ladder(rungs, rule);
  ASSERT_EQ(v.gains.size(), 1u);
  EXPECT_NEAR(v.gains[0], 2.0, 1e-9);
  EXPECT_EQ(v.stop, LadderStop::none);
}

TEST(StudyLadderRule, ALineCensoredFromTheStartClimbsPastAtMostCensoredRungs) {
  LadderRule rule = rule_of(512, 1.25, 1);
  // The text study's LARS line: censored at 16 within the cap, reaching at 32 and 64.
  std::vector<LadderRung> rungs = {make_rung(16, {std::nullopt, std::nullopt}),
                                   make_rung(32, {4000, 4400}), make_rung(64, {2100, 2300})};
  auto v = results::walk_ladder(rungs, rule);
  EXPECT_EQ(v.stop, LadderStop::cap) << "censored_rungs = 0: the first censored rung ends it";
  EXPECT_EQ(v.rungs, 1u);
  rule.censored_rungs = 1;
  v = results::walk_ladder(rungs, rule);
  EXPECT_EQ(v.stop, LadderStop::none);
  ASSERT_EQ(v.gains.size(), 2u);
  EXPECT_TRUE(std::isinf(v.gains[0])) << "16 -> 32: only a lower bound, never flat";
  EXPECT_NEAR(v.gains[1], std::sqrt(4000.0 * 4400.0) / std::sqrt(2100.0 * 2300.0), 1e-9);
  // Two censored rungs in a row with censored_rungs = 1: it stops at the second, naming both.
  rungs[1] = make_rung(32, {std::nullopt, 5000});
  v = results::walk_ladder(rungs, rule);
  EXPECT_EQ(v.stop, LadderStop::cap);
  EXPECT_EQ(v.rungs, 2u);
  EXPECT_EQ(results::describe_ladder_stop(v, rungs, rule),
            "cap (batch 32: 1 of 2 seeds did not reach the target within the cap; censored "
            "below it too: 16)");
  // A censored rung above a reached one still ends the ladder: there the batch got worse.
  rule.censored_rungs = 3;
  rungs = {make_rung(16, {900}), make_rung(32, {std::nullopt}), make_rung(64, {300})};
  v = results::walk_ladder(rungs, rule);
  EXPECT_EQ(v.stop, LadderStop::cap);
  EXPECT_EQ(v.rungs, 2u);
  // The ceiling ends a climb like any other, and its description names the censored doubling.
  rule = rule_of(32, 1.25, 1);
  rule.censored_rungs = 1;
  rungs = {make_rung(16, {std::nullopt}), make_rung(32, {4000})};
  v = results::walk_ladder(rungs, rule);
  EXPECT_EQ(v.stop, LadderStop::ceiling);
  EXPECT_EQ(results::describe_ladder_stop(v, rungs, rule), "ceiling (32; 16->32: 16 was censored)");
}

TEST(StudyLadderRule, ARungWhoseCapCannotHoldTheStepsBelowIsBeyondTheBudget) {
  // The Fashion-MNIST LAMB ladder of issue 36: max_samples 300,000 gives batch 4096 a 74-step
  // cap, and a seed needed 94 steps at 2048.
  LadderRule rule = rule_of(8192, 1.3, 2);
  rule.max_samples = 300000;
  const std::vector<LadderRung> rungs = {make_rung(1024, {130, 120}), make_rung(2048, {80, 94})};
  auto v = results::walk_ladder(rungs, rule);
  EXPECT_EQ(v.stop, LadderStop::budget);
  EXPECT_EQ(v.rungs, 2u);
  EXPECT_EQ(results::describe_ladder_stop(v, rungs, rule),
            "budget (batch 4096's cap of 74 steps from max_samples 300000 is below the 94 steps a "
            "seed needed at 2048: not run)");
  EXPECT_STREQ(results::ladder_stop_name(v.stop), "budget");
  // Both seeds within 74 steps: the rung may open.
  EXPECT_EQ(
      results::walk_ladder({make_rung(1024, {130, 120}), make_rung(2048, {70, 74})}, rule).stop,
      LadderStop::none);
  // budget_stop = false opens it as before.
  rule.budget_stop = false;
  EXPECT_EQ(results::walk_ladder(rungs, rule).stop, LadderStop::none);
  // A cap in steps is the same at every batch: a rung that reached within it never stops this way.
  LadderRule steps = rule_of(8192, 1.3, 2);
  steps.max_steps = 130;
  EXPECT_EQ(results::walk_ladder(rungs, steps).stop, LadderStop::none);
  EXPECT_EQ(results::study_max_cap_steps(std::nullopt, 300000, 4096), 74);
  EXPECT_EQ(results::study_max_cap_steps(std::nullopt, 300000, 2048), 147);
  EXPECT_EQ(results::study_max_cap_steps(500, 300000, 2048), 500) << "max_steps wins";
  EXPECT_FALSE(results::study_max_cap_steps(std::nullopt, std::nullopt, 64).has_value());
}

// ---- the coordinator

double ladder_curve(double reach_step, int64_t step) {
  return std::min(0.99, 0.8 * std::sqrt(static_cast<double>(step) / reach_step));
}

struct LadderHarness {
  SweepFiles files;
  SweepSpec spec;
  Plan plan;
  StudyPlan study;
  results::Store store;

  LadderHarness(const std::string& ladder, const std::string& seeds = "[0]")
      : files(ladder_spec(ladder, "\"data.train_size\" = 4096", seeds)),
        spec(files.spec()),
        plan(expand(spec, sweeps::testing::plan_options())),
        study(plan_study(spec, plan, sweeps::testing::plan_options())),
        store(files.dir.file("study.db")) {}

  StudySummary run(TrialSource& source, StudyObserver* observer = nullptr) {
    StudyObserver quiet;
    StudyEngine engine(study, store, "ladder", source, observer ? *observer : quiet);
    return engine.run();
  }
  FakeTrialSource source(size_t slots, FakeTrialSource::Metric metric) {
    return FakeTrialSource(slots, std::move(metric), config::Target{"val_acc", 0.8},
                           spec.study->evals_per_octave, &store);
  }
  // The batches that opened, per seed.
  std::map<int64_t, std::vector<int64_t>> opened() {
    std::map<int64_t, std::vector<int64_t>> out;
    for (const auto& c : store.read_study_cells("ladder")) out[c.seed].push_back(c.global_batch);
    for (auto& [seed, batches] : out) std::sort(batches.begin(), batches.end());
    return out;
  }
  // The stop reason recomputed from the stored cells alone (what the report does).
  LadderStop stored_stop() {
    std::map<int64_t, LadderRung> rungs;
    for (const auto& c : store.read_study_cells("ladder")) {
      rungs[c.global_batch].batch = c.global_batch;
      rungs[c.global_batch].steps.push_back(c.status == "reached" ? c.steps_to_target
                                                                  : std::nullopt);
    }
    std::vector<LadderRung> list;
    for (auto& [b, r] : rungs) list.push_back(r);
    return results::walk_ladder(list, ladder_rule(*spec.study)).stop;
  }
};

// The centre reaches at `reach`; its neighbours 1.5x later (the centre wins every cell).
FakeTrialSource::Metric steps_by_batch(std::function<double(int64_t, double)> reach) {
  return [reach](double lr, int64_t batch, int64_t step) {
    return ladder_curve(reach(batch, lr) * (lr == 0.5 ? 1.0 : 1.5), step);
  };
}

class LadderRecorder : public StudyObserver {
 public:
  void ladder_stopped(const std::string& group, const std::string& why) override {
    stops.push_back(group + ": " + why);
  }
  std::vector<std::string> stops;
};

TEST(StudyLadderEngine, StopsWhenTwoDoublingsInARowSaveLessThanMinGain) {
  // S(B) = 100 + 6400 / B: 32 -> 300, 64 -> 200 (1.5x), 128 -> 150 (1.33x), 256 -> 125 (1.2x),
  // 512 -> 112.5 (1.11x): two doublings below 1.25x end the ladder at 512; 1024 never opens.
  LadderHarness h("start = 32\nceiling = 1024\nmin_gain = 1.25");
  auto source = h.source(2, steps_by_batch([](int64_t b, double) { return 100.0 + 6400.0 / b; }));
  LadderRecorder recorder;
  const auto summary = h.run(source, &recorder);
  EXPECT_EQ(h.opened()[0], (std::vector<int64_t>{32, 64, 128, 256, 512}));
  EXPECT_EQ(summary.reached, 5u);
  EXPECT_EQ(summary.searching, 0u) << "the unopened ceiling cell is not owed";
  EXPECT_EQ(summary.beyond_ladder, 1u);
  // `sweep status` asks the same rule over the stored rows alone: the same cell, batch 1024.
  const auto beyond = cells_beyond_ladder(h.study, h.store.read_study_cells("ladder"));
  ASSERT_EQ(beyond.size(), 1u);
  EXPECT_EQ(h.study.job(h.study.cells.size() - 1).global_batch, 1024);
  EXPECT_EQ(*beyond.begin(), h.study.cells.back().cell_id);
  EXPECT_EQ(h.stored_stop(), LadderStop::flattening);
  ASSERT_EQ(recorder.stops.size(), 1u);
  EXPECT_TRUE(contains(recorder.stops[0], "flattening (256->512 saved 1.1")) << recorder.stops[0];
  EXPECT_TRUE(contains(recorder.stops[0], "x < 1.25x)")) << recorder.stops[0];
}

TEST(StudyLadderEngine, ALowerMinGainOnRerunClimbsOnFromTheStop) {
  // As above, stopped at 512 by flattening under min_gain 1.25; the rule's keys do not shape a
  // cell, so the same cells under min_gain 1.05 go on to the ceiling, running only the new cell.
  LadderHarness h("start = 32\nceiling = 1024\nmin_gain = 1.25");
  const auto metric = steps_by_batch([](int64_t b, double) { return 100.0 + 6400.0 / b; });
  auto first = h.source(2, metric);
  h.run(first);
  ASSERT_EQ(h.opened()[0].back(), 512);
  h.spec.study->ladder->min_gain = 1.05;
  auto second = h.source(2, metric);
  const auto summary = h.run(second);
  EXPECT_EQ(h.opened()[0], (std::vector<int64_t>{32, 64, 128, 256, 512, 1024}));
  EXPECT_EQ(summary.beyond_ladder, 0u);
  EXPECT_EQ(h.stored_stop(), LadderStop::ceiling);
  for (const auto& id : second.start_order) EXPECT_EQ(first.starts.count(id), 0u) << id;
}

TEST(StudyLadderEngine, ClimbsToTheCeilingWhileEveryDoublingPays) {
  // Perfect scaling, S(B) = 6400 / B: every doubling halves the steps.
  LadderHarness h("start = 32\nceiling = 256");
  auto source = h.source(3, steps_by_batch([](int64_t b, double) { return 6400.0 / b; }));
  const auto summary = h.run(source);
  EXPECT_EQ(h.opened()[0], (std::vector<int64_t>{32, 64, 128, 256}));
  EXPECT_EQ(summary.beyond_ladder, 0u);
  EXPECT_EQ(h.stored_stop(), LadderStop::ceiling);
}

TEST(StudyLadderEngine, ACensoredCellStopsTheLadderAtItsBatch) {
  // Good scaling up to 128, then batch 256 needs 5000 steps: past any cap; 512 never opens.
  LadderHarness h("start = 32\nceiling = 512");
  auto source =
      h.source(2, steps_by_batch([](int64_t b, double) { return b >= 256 ? 5000.0 : 6400.0 / b; }));
  const auto summary = h.run(source);
  EXPECT_EQ(h.opened()[0], (std::vector<int64_t>{32, 64, 128, 256}));
  EXPECT_EQ(summary.censored, 1u);
  EXPECT_EQ(summary.beyond_ladder, 1u);
  EXPECT_EQ(h.stored_stop(), LadderStop::cap);
}

TEST(StudyLadderEngine, ALineCensoredAtItsFirstBatchClimbsWhenCensoredRungsAllowsIt) {
  // S(B) = 96000 / B: 3000 steps at 32 and 1500 at 64, past the cap of 1000; 750 at 128.
  const auto metric = steps_by_batch([](int64_t b, double) { return 96000.0 / b; });
  LadderHarness stops("start = 32\nceiling = 512");
  auto first = stops.source(2, metric);
  stops.run(first);
  EXPECT_EQ(stops.opened()[0], (std::vector<int64_t>{32}));
  EXPECT_EQ(stops.stored_stop(), LadderStop::cap);
  // censored_rungs = 2: 32 and 64 are censored, 128 reaches, and the line climbs on to the
  // ceiling, every doubling from there saving 2x.
  LadderHarness climbs("start = 32\nceiling = 512\ncensored_rungs = 2");
  EXPECT_EQ(climbs.spec.study->ladder->censored_rungs, 2);
  auto second = climbs.source(2, metric);
  const auto summary = climbs.run(second);
  EXPECT_EQ(climbs.opened()[0], (std::vector<int64_t>{32, 64, 128, 256, 512}));
  EXPECT_EQ(summary.censored, 2u);
  EXPECT_EQ(climbs.stored_stop(), LadderStop::ceiling);
  // censored_rungs = 1 climbs past 32 only: 64 is censored too and ends the line there.
  LadderHarness once("start = 32\nceiling = 512\ncensored_rungs = 1");
  auto third = once.source(2, metric);
  once.run(third);
  EXPECT_EQ(once.opened()[0], (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(once.stored_stop(), LadderStop::cap);
}

// Two fake sources behind one, so that each seed trains along its own curves (the fake source's
// metric sees the learning rate and the batch, not the seed).
class SeedSource : public TrialSource {
 public:
  SeedSource(FakeTrialSource seed0, FakeTrialSource seed1)
      : sources_{std::move(seed0), std::move(seed1)} {}
  size_t slots() const override { return sources_[0].slots() + sources_[1].slots(); }
  size_t running() const override { return sources_[0].running() + sources_[1].running(); }
  void start(const Job& trial, const std::optional<StopRequest>& stop) override {
    const size_t s = trial.seed == 0 ? 0 : 1;
    owner_[trial.run_id] = s;
    batch_of_[trial.run_id] = trial.global_batch;
    events.push_back({true, trial.global_batch});
    sources_[s].start(trial, stop);
  }
  void request_stop(const std::string& run_id, const StopRequest& stop) override {
    sources_[owner_.at(run_id)].request_stop(run_id, stop);
  }
  SourceEvents poll() override {
    SourceEvents out = sources_[0].poll();
    SourceEvents more = sources_[1].poll();
    out.updates.insert(out.updates.end(), more.updates.begin(), more.updates.end());
    out.ended.insert(out.ended.end(), more.ended.begin(), more.ended.end());
    for (const auto& e : out.ended) events.push_back({false, batch_of_.at(e.run_id)});
    return out;
  }
  struct Event {
    bool start = false;  // else an end
    int64_t batch = 0;
  };
  std::vector<Event> events;  // in order

 private:
  FakeTrialSource sources_[2];
  std::map<std::string, size_t> owner_;
  std::map<std::string, int64_t> batch_of_;
};

TEST(StudyLadderEngine, SeedsMoveTogetherOnTheirMeanAndABatchWaitsForEverySeedBelow) {
  // One flat doubling ends a ladder here. Seed 0 alone would stop at 128 (64 -> 128 saves 1.1x);
  // seed 1 keeps halving. Their geometric mean saves sqrt(1.1 x 2) = 1.48x per doubling from 64
  // on: both seeds climb to the ceiling together.
  LadderHarness h("start = 32\nceiling = 256\nmin_gain = 1.3\nflat_doublings = 1", "[0, 1]");
  const auto flat = steps_by_batch([](int64_t b, double) {
    return b == 32 ? 400.0 : 200.0 / std::pow(1.1, std::log2(static_cast<double>(b) / 64.0));
  });
  const auto halving = steps_by_batch([](int64_t b, double) { return 12800.0 / b; });
  SeedSource source(h.source(1, flat), h.source(3, halving));
  const auto summary = h.run(source);
  const auto opened = h.opened();
  EXPECT_EQ(opened.at(0), (std::vector<int64_t>{32, 64, 128, 256}));
  EXPECT_EQ(opened.at(1), opened.at(0)) << "the same batches for every seed";
  EXPECT_EQ(summary.beyond_ladder, 0u);
  EXPECT_EQ(h.stored_stop(), LadderStop::ceiling);
  // No trial at 2B started before every trial of both seeds at B had ended: at 128 seed 1 reaches
  // in 100 steps and seed 0 in 182, so seed 1's line alone would have opened 256 sooner.
  std::map<int64_t, size_t> first_start, last_end;
  for (size_t i = 0; i < source.events.size(); ++i) {
    const auto& e = source.events[i];
    if (e.start && first_start.count(e.batch) == 0) first_start[e.batch] = i;
    if (!e.start) last_end[e.batch] = i;
  }
  for (int64_t b : {32, 64, 128}) EXPECT_LT(last_end[b], first_start[b * 2]) << b;
}

TEST(StudyLadderEngine, SeedsStopTogetherWhenTheirMeanFlattens) {
  // From 64 on seed 0 saves 1.1x per doubling and seed 1 1.4x: seed 1 alone would climb to the
  // ceiling, but their mean saves sqrt(1.1 x 1.4) = 1.24x < 1.3x, twice by 256, so the group
  // stops there by flattening, both seeds alike.
  LadderHarness h("start = 32\nceiling = 512\nmin_gain = 1.3", "[0, 1]");
  const auto curve = [](double gain) {
    return steps_by_batch([gain](int64_t b, double) {
      return b == 32 ? 400.0 : 200.0 / std::pow(gain, std::log2(b / 64.0));
    });
  };
  SeedSource source(h.source(2, curve(1.1)), h.source(2, curve(1.4)));
  const auto summary = h.run(source);
  const auto opened = h.opened();
  EXPECT_EQ(opened.at(0), (std::vector<int64_t>{32, 64, 128, 256}));
  EXPECT_EQ(opened.at(1), opened.at(0));
  EXPECT_EQ(summary.beyond_ladder, 2u) << "batch 512 of both seeds";
  EXPECT_EQ(h.stored_stop(), LadderStop::flattening);
}

// Reports it is stopping once `limit` trials started (a user's Ctrl-C mid-study).
class InterruptedSource : public FakeTrialSource {
 public:
  InterruptedSource(FakeTrialSource base, size_t limit)
      : FakeTrialSource(std::move(base)), limit_(limit) {}
  bool stopping() const override { return start_order.size() >= limit_; }

 private:
  size_t limit_;
};

TEST(StudyLadderEngine, AResumedLadderOpensTheSameCellsAndRunsNothingTwice) {
  const auto metric = steps_by_batch([](int64_t b, double) { return 100.0 + 6400.0 / b; });
  const std::string ladder = "start = 32\nceiling = 1024\nmin_gain = 1.25";
  LadderHarness straight(ladder);
  auto all = straight.source(2, metric);
  straight.run(all);

  LadderHarness h(ladder);
  InterruptedSource first(h.source(2, metric), 7);
  const auto stopped = h.run(first);
  EXPECT_TRUE(stopped.stopped);
  EXPECT_GT(stopped.searching, 0u) << "interrupted mid-ladder: cells are still owed";
  EXPECT_EQ(stopped.beyond_ladder, 0u);
  auto second = h.source(2, metric);
  const auto resumed = h.run(second);
  EXPECT_EQ(h.opened(), straight.opened());
  EXPECT_EQ(h.stored_stop(), LadderStop::flattening);
  EXPECT_EQ(resumed.beyond_ladder, 1u);
  EXPECT_EQ(resumed.searching, 0u);
  for (const auto& id : second.start_order) {
    EXPECT_EQ(first.starts.count(id), 0u) << id << " ran twice";
  }
  // After the stop, a third run changes nothing.
  auto third = h.source(2, metric);
  const auto again = h.run(third);
  EXPECT_TRUE(third.start_order.empty());
  EXPECT_EQ(again.beyond_ladder, 1u);
  EXPECT_EQ(h.opened(), straight.opened());
}

}  // namespace
}  // namespace batchlab::sweeps::study
