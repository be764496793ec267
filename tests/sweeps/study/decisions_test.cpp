// The study's decisions as pure functions of evaluation rows: the interpolated crossing, the race,
// pruning (after warmup, never within 2x), outcomes and the learning-rate bracket.
#include "sweeps/study/decisions.h"

#include <gtest/gtest.h>

#include <cmath>

namespace batchlab::sweeps::study {
namespace {

const config::Target kAcc = config::Target{"val_acc", 0.7};
const config::Target kLoss = config::Target{"val_loss", 0.5};

TrialView trial(int64_t k, Curve curve, bool ended = false, std::string status = "",
                std::optional<std::string> stop_reason = std::nullopt) {
  TrialView t;
  t.lr_index = k;
  t.curve = std::move(curve);
  t.ended = ended;
  t.run_status = std::move(status);
  t.stop_reason = std::move(stop_reason);
  return t;
}

// The image study's rule (issue 13): prune at the first evaluation past warmup.
PruneRule after_warmup(int64_t warmup_steps) { return PruneRule{warmup_steps, 0, 0.0}; }

TEST(StudyCrossing, InterpolatesInLogStepBetweenTheEvaluationsAroundTheTarget) {
  const Curve curve = {{1, 0.1}, {2, 0.5}, {4, 0.9}, {8, 0.95}};
  // Half-way from 0.5 to 0.9 is half-way from log 2 to log 4: 2 * sqrt(2).
  EXPECT_NEAR(steps_to_target(curve, kAcc).value(), 2.0 * std::sqrt(2.0), 1e-12);
  EXPECT_EQ(steps_to_target(curve, config::Target{"val_acc", 0.9}).value(), 4.0);  // exactly at 4
  EXPECT_EQ(steps_to_target({{3, 0.8}}, kAcc).value(), 3.0);  // first evaluation, none before
  EXPECT_FALSE(steps_to_target(curve, config::Target{"val_acc", 0.99}).has_value());
  // A loss is reached from above.
  const Curve loss = {{10, 2.0}, {20, 1.0}, {40, 0.25}};
  const double expected = std::exp(std::log(20.0) + (0.5 - 1.0) / (0.25 - 1.0) * std::log(2.0));
  EXPECT_NEAR(steps_to_target(loss, kLoss).value(), expected, 1e-9);
  // A non-finite evaluation before the crossing leaves the crossing at the reaching step.
  EXPECT_EQ(steps_to_target({{4, std::nullopt}, {8, 0.9}}, kAcc).value(), 8.0);
}

TEST(StudyRace, EveryOtherTrialStopsAtTheLeadersCrossing) {
  std::vector<TrialView> trials = {
      trial(0, {{1, 0.1}, {2, 0.5}, {4, 0.9}}),  // reaches at 2.83
      trial(-1, {{1, 0.1}, {2, 0.2}, {4, 0.4}}),
      trial(1, {{1, 0.1}, {2, 0.3}}),
  };
  EXPECT_EQ(race_leader(trials, kAcc), 0u);
  EXPECT_FALSE(race_stop(trials, 0, kAcc).has_value()) << "the leader runs on";
  for (size_t i : {1u, 2u}) {
    const auto stop = race_stop(trials, i, kAcc);
    ASSERT_TRUE(stop.has_value());
    EXPECT_EQ(stop->reason, "stopped_by_race");
    EXPECT_EQ(stop->step, 3) << "ceil(2.83): no later evaluation can cross before S*";
    EXPECT_EQ(stop->reason, "stopped_by_race");
    EXPECT_EQ(stop->step, 3);
  }
  // A faster trial takes the lead, and the former leader is no longer stopped by anyone: it
  // reached.
  trials[2].curve.push_back({3, 0.8});
  EXPECT_EQ(race_leader(trials, kAcc), 2u);
  EXPECT_FALSE(race_stop(trials, 0, kAcc).has_value());
  EXPECT_EQ(race_stop(trials, 1, kAcc)->step, 3);
  // No one reached: no race.
  EXPECT_FALSE(race_stop({trial(0, {{1, 0.1}}), trial(1, {{1, 0.2}})}, 0, kAcc).has_value());
}

TEST(StudyPrune, FiresOnlyAfterWarmupAndOnlyAgainstATrialTwiceAsFast) {
  // The leader's metric is 0.1 * step; the slow trial's 0.025 * step: the leader reached the slow
  // trial's metric in a quarter of its steps at every evaluation.
  Curve leader, slow, close;
  for (int64_t s : {1, 2, 4, 8, 16, 32}) {
    leader.push_back({s, 0.1 * static_cast<double>(s) / 100.0});
    slow.push_back({s, 0.025 * static_cast<double>(s) / 100.0});
    close.push_back({s, 0.06 * static_cast<double>(s) / 100.0});  // within 2x of the leader
  }
  leader.push_back({64, 0.9});  // reaches the target (0.7): only a trial that reached leads
  const std::vector<TrialView> trials = {trial(0, leader), trial(1, slow), trial(-1, close)};
  // Warmup 10: the first evaluation after it is step 16, although the rule held from step 2.
  const auto pruned = prune_stop(trials, 1, kAcc, after_warmup(10));
  ASSERT_TRUE(pruned.has_value());
  EXPECT_EQ(pruned->reason, "pruned");
  EXPECT_EQ(pruned->step, 16);
  EXPECT_EQ(prune_stop(trials, 1, kAcc, after_warmup(0))->step, 2);
  EXPECT_FALSE(prune_stop(trials, 1, kAcc, after_warmup(32)).has_value()) << "nothing after warmup";
  // 0.06 x s is reached by the leader at 0.6 x s: within 2x, never pruned.
  EXPECT_FALSE(prune_stop(trials, 2, kAcc, after_warmup(0)).has_value());
  EXPECT_FALSE(prune_stop(trials, 0, kAcc, after_warmup(0)).has_value())
      << "the leader is never pruned";
  // Exactly twice as fast is enough ("in half as many steps or fewer").
  Curve half;
  for (int64_t s : {2, 4, 8, 16, 32}) half.push_back({s, 0.05 * static_cast<double>(s) / 100.0});
  EXPECT_EQ(prune_stop({trial(0, leader), trial(1, half)}, 1, kAcc, after_warmup(0))->step, 2);
}

TEST(StudyPrune, TrialsShortOfTheTargetNeverPruneEachOther) {
  // Two noisy curves, each ahead of the other at some evaluation: with neither at the target,
  // pruning either could leave the cell without a trial that can still reach (both ended up
  // pruned when any trial could lead).
  const Curve a = {{16, 0.40}, {32, 0.20}, {64, 0.60}};
  const Curve b = {{16, 0.10}, {32, 0.45}, {128, 0.30}};
  const std::vector<TrialView> trials = {trial(0, a), trial(1, b)};
  EXPECT_FALSE(prune_stop(trials, 0, kAcc, after_warmup(0)).has_value());
  EXPECT_FALSE(prune_stop(trials, 1, kAcc, after_warmup(0)).has_value());
  // Once `a` reaches, `b` is measured against it.
  Curve reached = a;
  reached.push_back({128, 0.8});
  EXPECT_TRUE(prune_stop({trial(0, reached), trial(1, b)}, 1, kAcc, after_warmup(0)).has_value());
}

TEST(StudyPrune, OneBadEvaluationDoesNotPrune) {
  // The leader reaches 0.5 at step 20 and the target at 40. The other trial's latest evaluation
  // (0.1 at step 56) the leader passed at step 10, but its best so far (0.62 at 48) the leader
  // reached only at step 31: within 2x, so it runs on.
  const Curve leader = {{10, 0.1}, {20, 0.5}, {30, 0.6}, {40, 0.75}};
  const Curve dip = {{16, 0.2}, {32, 0.5}, {48, 0.62}, {56, 0.1}};
  EXPECT_FALSE(prune_stop({trial(0, leader), trial(1, dip)}, 1, kAcc, after_warmup(0)).has_value());
}

TEST(StudyPrune, WaitsForAFairRunByDefault) {
  // The leader's metric is 0.1 * step / 100 up to step 32, then 0.9 at 64: it crosses the target
  // (0.7) at S* = 54.5 (log-step interpolation). The slow trial runs at a quarter of its speed.
  Curve leader, slow;
  for (int64_t s : {1, 2, 4, 8, 16, 32, 48, 64, 96, 128}) {
    slow.push_back({s, 0.025 * static_cast<double>(s) / 100.0});
  }
  for (int64_t s : {1, 2, 4, 8, 16, 32})
    leader.push_back({s, 0.1 * static_cast<double>(s) / 100.0});
  leader.push_back({64, 0.9});
  const double s_star = steps_to_target(leader, kAcc).value();
  ASSERT_GT(s_star, 32.0);
  ASSERT_LT(s_star, 64.0);
  const std::vector<TrialView> trials = {trial(0, leader), trial(1, slow)};
  // The old rule prunes at step 2, 4% of the leader's steps.
  EXPECT_EQ(prune_stop(trials, 1, kAcc, after_warmup(0))->step, 2);
  // Defaults, warmup 1: three evaluations past it (2, 4, 8), then the first evaluation at or past
  // S*/2 = 27.3: step 32.
  EXPECT_EQ(prune_stop(trials, 1, kAcc, PruneRule{1, 3, 0.5})->step, 32);
  EXPECT_EQ(PruneRule{}.min_evals, 3);
  EXPECT_EQ(PruneRule{}.min_leader_fraction, 0.5);
  // The evaluation count alone: the third evaluation past warmup 1 is step 8.
  EXPECT_EQ(prune_stop(trials, 1, kAcc, PruneRule{1, 3, 0.0})->step, 8);
  // The leader's fraction alone: the first evaluation at or past 0.75 S*.
  const auto late = prune_stop(trials, 1, kAcc, PruneRule{0, 0, 0.75});
  ASSERT_TRUE(late.has_value());
  EXPECT_GE(static_cast<double>(late->step), 0.75 * s_star);
  EXPECT_EQ(late->step, 48);
  // Fraction 1 and a trial that stops at S* by the race: never pruned within its curve up to S*.
  Curve until_race;
  for (const auto& p : slow) {
    if (static_cast<double>(p.step) < s_star) until_race.push_back(p);
  }
  EXPECT_FALSE(prune_stop({trial(0, leader), trial(1, until_race)}, 1, kAcc, PruneRule{0, 0, 1.0})
                   .has_value());
  // Evaluations without a finite value still count towards the fair run's evaluations.
  Curve gaps = {{2, std::nullopt}, {4, std::nullopt}, {8, 0.001}};
  EXPECT_EQ(prune_stop({trial(0, leader), trial(1, gaps)}, 1, kAcc, PruneRule{1, 3, 0.0})->step, 8);
}

TEST(StudyOutcome, FollowsHowTheRunEnded) {
  const Curve reached = {{1, 0.2}, {2, 0.8}};
  const Curve short_of = {{1, 0.2}, {2, 0.4}};
  EXPECT_EQ(trial_outcome(trial(0, reached, true, "done"), kAcc), "reached");
  EXPECT_EQ(trial_outcome(trial(0, reached, true, "stopped", "stopped_by_race"), kAcc), "reached");
  EXPECT_EQ(trial_outcome(trial(0, short_of, true, "done"), kAcc), "capped");
  EXPECT_EQ(trial_outcome(trial(0, short_of, true, "diverged"), kAcc), "diverged");
  EXPECT_EQ(trial_outcome(trial(0, short_of, true, "stopped", "pruned"), kAcc), "pruned");
  EXPECT_EQ(trial_outcome(trial(0, short_of, true, "stopped", "stopped_by_race"), kAcc),
            "stopped_by_race");
  // A stop the study did not ask for (a user's, or an old record without the reason) is no result.
  EXPECT_FALSE(trial_outcome(trial(0, short_of, true, "stopped", "cancelled"), kAcc).has_value());
  EXPECT_FALSE(trial_outcome(trial(0, short_of, true, "stopped"), kAcc).has_value());
  EXPECT_FALSE(trial_outcome(trial(0, short_of, true, "failed"), kAcc).has_value());
  EXPECT_FALSE(trial_outcome(trial(0, short_of, true, "preempted"), kAcc).has_value());
  EXPECT_FALSE(trial_outcome(trial(0, reached, false), kAcc).has_value()) << "still running";
}

// Ended trials whose steps to target are `steps` (0 = not reached, best metric 0.5).
std::vector<TrialView> ended_at(const std::vector<std::pair<int64_t, double>>& points) {
  std::vector<TrialView> out;
  for (const auto& [k, steps] : points) {
    out.push_back(steps > 0 ? trial(k, {{static_cast<int64_t>(steps), 0.9}}, true, "done")
                            : trial(k, {{100, 0.5}}, true, "stopped", "stopped_by_race"));
  }
  return out;
}

TEST(StudyBracket, StartsWithTheCentreThenItsNeighbours) {
  const auto first = next_bracket_step({}, kAcc, 6);
  EXPECT_EQ(first.add, (std::vector<int64_t>{0, -1, 1}));
  EXPECT_FALSE(first.complete);
  auto trials = ended_at({{0, 50}, {-1, 0}, {1, 40}});
  trials[1].ended = false;  // one still running: wait
  const auto wait = next_bracket_step(trials, kAcc, 6);
  EXPECT_TRUE(wait.add.empty());
  EXPECT_FALSE(wait.complete);
}

TEST(StudyBracket, ExtendsTowardsTheBestWhileItIsAtAnEdge) {
  // Best at the high edge: one more point above.
  EXPECT_EQ(next_bracket_step(ended_at({{0, 50}, {-1, 0}, {1, 40}}), kAcc, 6).add,
            (std::vector<int64_t>{2}));
  // Best at the low edge: one more point below.
  EXPECT_EQ(next_bracket_step(ended_at({{0, 50}, {-1, 30}, {1, 0}}), kAcc, 6).add,
            (std::vector<int64_t>{-2}));
  // Nobody reached: the best metric leads the way.
  auto censored = ended_at({{0, 0}, {-1, 0}, {1, 0}});
  censored[0].curve = {{100, 0.6}};
  censored[2].curve = {{100, 0.65}};
  EXPECT_EQ(next_bracket_step(censored, kAcc, 6).add, (std::vector<int64_t>{2}));
  // Everything diverged: the rate is too high, go down.
  std::vector<TrialView> diverged;
  for (int64_t k : {0, -1, 1}) diverged.push_back(trial(k, {{1, std::nullopt}}, true, "diverged"));
  EXPECT_EQ(next_bracket_step(diverged, kAcc, 6).add, (std::vector<int64_t>{-2}));
}

TEST(StudyBracket, StopsWhenTheBestIsInteriorOrAtLrPointsMax) {
  const auto interior = next_bracket_step(ended_at({{0, 30}, {-1, 0}, {1, 40}}), kAcc, 6);
  EXPECT_TRUE(interior.complete);
  EXPECT_TRUE(interior.add.empty());
  EXPECT_EQ(interior.best, 0u);
  // Best at the edge, but 4 points ran and 4 is the maximum.
  const auto full = next_bracket_step(ended_at({{0, 50}, {-1, 0}, {1, 40}, {2, 20}}), kAcc, 4);
  EXPECT_TRUE(full.complete);
  EXPECT_EQ(full.best, 3u);
  // With room for a fifth it would have extended.
  EXPECT_EQ(next_bracket_step(ended_at({{0, 50}, {-1, 0}, {1, 40}, {2, 20}}), kAcc, 5).add,
            (std::vector<int64_t>{3}));
}

TEST(StudyBracket, ARerunStartsAloneAndOpensItsNeighboursOnlyWhenItDoesNotReach) {
  const auto first = next_bracket_step({}, kAcc, 6, BracketStart::one);
  EXPECT_EQ(first.add, (std::vector<int64_t>{0}));
  auto running = ended_at({{0, 50}});
  running[0].ended = false;
  EXPECT_TRUE(next_bracket_step(running, kAcc, 6, BracketStart::one).add.empty());
  const auto reached = next_bracket_step(ended_at({{0, 50}}), kAcc, 6, BracketStart::one);
  EXPECT_TRUE(reached.complete);
  EXPECT_EQ(reached.best, 0u);
  const auto missed = next_bracket_step(ended_at({{0, 0}}), kAcc, 6, BracketStart::one);
  EXPECT_FALSE(missed.complete);
  EXPECT_EQ(missed.add, (std::vector<int64_t>{-1, 1}));
  // A rerun of a censored first seed's cell stays alone whatever it does.
  const auto alone = next_bracket_step(ended_at({{0, 0}}), kAcc, 6, BracketStart::alone);
  EXPECT_TRUE(alone.complete);
  EXPECT_EQ(alone.best, 0u);
  EXPECT_EQ(next_bracket_step({}, kAcc, 6, BracketStart::alone).add, (std::vector<int64_t>{0}));
  // From three points on it is the usual bracket: the best at an edge extends.
  EXPECT_EQ(next_bracket_step(ended_at({{0, 0}, {-1, 0}, {1, 40}}), kAcc, 6, BracketStart::one).add,
            (std::vector<int64_t>{2}));
}

}  // namespace
}  // namespace batchlab::sweeps::study
