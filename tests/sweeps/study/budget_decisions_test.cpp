// The fixed-budget search's decisions as pure functions (sweeps/study/budget_decisions.h) and the
// rung and rate arithmetic of its plan (sweeps/study/budget_plan.h): curves given by hand.
#include "sweeps/study/budget_decisions.h"

#include <gtest/gtest.h>

#include "sweeps/study/budget_engine.h"
#include "sweeps/study/budget_plan.h"

namespace batchlab::sweeps::study {
namespace budget_decisions_test {

PointView at(std::map<int64_t, double> metric, bool diverged = false) {
  PointView p;
  p.metric = std::move(metric);
  p.diverged = diverged;
  for (const auto& [step, v] : p.metric) p.last_step = std::max(p.last_step, step);
  return p;
}

TEST(BudgetRungs, TheFirstRungIsTheBudgetOverEtaToTheRungsAndTheLastIsTheBudget) {
  EXPECT_EQ(rung_steps(200, 2, 4), (std::vector<int64_t>{25, 50, 100, 200}));
  // Not a multiple: r_0 rounds up, every rung but the last is a multiple of it.
  EXPECT_EQ(rung_steps(25, 2, 4), (std::vector<int64_t>{4, 8, 16, 25}));
  EXPECT_EQ(rung_steps(90, 3, 3), (std::vector<int64_t>{10, 30, 90}));
  // Fewer steps than rungs: no rung repeats.
  EXPECT_EQ(rung_steps(3, 2, 4), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(rung_steps(50, 2, 1), (std::vector<int64_t>{50}));
}

TEST(BudgetRates, ExponentsAreCentredWithTheExtraPointAbove) {
  EXPECT_EQ(lr_exponents(1), (std::vector<int64_t>{0}));
  EXPECT_EQ(lr_exponents(3), (std::vector<int64_t>{-1, 0, 1}));
  EXPECT_EQ(lr_exponents(4), (std::vector<int64_t>{-1, 0, 1, 2}));
  EXPECT_EQ(lr_exponents(5), (std::vector<int64_t>{-2, -1, 0, 1, 2}));
}

TEST(BudgetPromotion, KeepsTheBestCeilNOverEtaWithAFiniteValue) {
  std::vector<PointView> p = {at({{10, 3.0}}), at({{10, 2.0}}), at({{10, 2.5}}), at({}, true),
                              at({{10, 1.0}})};
  // 5 members, eta 2: 3 go on; the diverged one never does.
  EXPECT_EQ(promote(p, {0, 1, 2, 3, 4}, 10, 2, true), (std::vector<size_t>{4, 1, 2}));
  // Accuracy: higher is better.
  EXPECT_EQ(promote(p, {0, 1, 2, 3, 4}, 10, 2, false), (std::vector<size_t>{0, 2, 1}));
  // Ties go to the lower index, so a resume decides the same.
  std::vector<PointView> tie = {at({{10, 2.0}}), at({{10, 2.0}}), at({{10, 2.0}})};
  EXPECT_EQ(promote(tie, {2, 1, 0}, 10, 3, true), (std::vector<size_t>{0}));
  // Fewer finite values than places: only those.
  std::vector<PointView> bad = {at({}, true), at({{10, 5.0}}), at({}, true), at({}, true)};
  EXPECT_EQ(promote(bad, {0, 1, 2, 3}, 10, 2, true), (std::vector<size_t>{1}));
}

TEST(BudgetHalving, StartsEveryPointAtTheFirstRung) {
  const auto step = halving_step(std::vector<PointView>(4), {5, 10, 20}, 2, true);
  EXPECT_FALSE(step.complete);
  EXPECT_EQ(step.rung, 0u);
  EXPECT_EQ(step.to_start, (std::vector<size_t>{0, 1, 2, 3}));
}

TEST(BudgetHalving, WaitsForEveryMemberOfARungThenStartsOnlyThePromoted) {
  std::vector<PointView> p = {at({{5, 4.0}}), at({{5, 3.0}}), PointView{}, at({{5, 1.0}})};
  p[2].running = true;  // still training to step 5
  auto step = halving_step(p, {5, 10, 20}, 2, true);
  EXPECT_EQ(step.rung, 0u);
  EXPECT_TRUE(step.to_start.empty());  // the running one is not started twice
  EXPECT_FALSE(step.complete);
  p[2] = at({{5, 2.0}});
  step = halving_step(p, {5, 10, 20}, 2, true);
  EXPECT_EQ(step.rung, 1u);
  EXPECT_EQ(step.members, (std::vector<size_t>{3, 2}));
  EXPECT_EQ(step.to_start, (std::vector<size_t>{3, 2}));
  EXPECT_EQ(step.last_rung, (std::vector<size_t>{0, 0, 1, 1}));
}

TEST(BudgetHalving, TheBestAtTheLastRungIsTheCellsPoint) {
  // Point 2 led at rung 0 but point 3 wins at the budget: the last rung decides.
  std::vector<PointView> p = {at({{5, 4.0}}), at({{5, 3.0}}), at({{5, 1.0}, {20, 0.8}}),
                              at({{5, 2.0}, {20, 0.5}})};
  const auto step = halving_step(p, {5, 20}, 2, true);
  EXPECT_TRUE(step.complete);
  ASSERT_TRUE(step.best);
  EXPECT_EQ(*step.best, 3u);
}

TEST(BudgetHalving, ADivergedMemberIsDoneWithItsRungAndNeverGoesOn) {
  std::vector<PointView> p = {at({{5, 4.0}}), at({}, true), at({{5, 1.0}}), at({}, true)};
  const auto step = halving_step(p, {5, 10}, 2, true);
  EXPECT_EQ(step.rung, 1u);
  EXPECT_EQ(step.members, (std::vector<size_t>{2, 0}));
  // A member that trained past its rung with no finite value there cannot get one: done too.
  PointView lost;
  lost.last_step = 10;
  std::vector<PointView> q = {lost, at({{5, 1.0}})};
  EXPECT_EQ(halving_step(q, {5, 10}, 2, true).members, (std::vector<size_t>{1}));
}

TEST(BudgetHalving, ACellWhosePointsAllDivergedCompletesWithoutABest) {
  std::vector<PointView> p = {at({}, true), at({}, true)};
  const auto step = halving_step(p, {5, 10}, 2, true);
  EXPECT_TRUE(step.complete);
  EXPECT_FALSE(step.best);
}

TEST(BudgetOrder, BatchesRunFromTheEndsInwards) {
  EXPECT_EQ(spread_order({16, 32, 64, 128, 256, 512, 1024}),
            (std::vector<int64_t>{16, 1024, 128, 32, 256, 64, 512}));
  EXPECT_EQ(spread_order({64}), (std::vector<int64_t>{64}));
  EXPECT_EQ(spread_order({64, 128}), (std::vector<int64_t>{64, 128}));
}

}  // namespace budget_decisions_test
}  // namespace batchlab::sweeps::study
