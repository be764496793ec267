// A spec's [search] section (sweeps/study/budget_reader.cpp) and the plan it expands to
// (sweeps/study/budget_plan.h): cells, equal budgets per line, rungs from the epochs, trial
// configs.
#include "sweeps/study/budget_plan.h"

#include <gtest/gtest.h>
#include <toml++/toml.h>

#include "tests/sweeps/sweep_test_util.h"

namespace batchlab::sweeps::study {
namespace budget_plan_test {

using sweeps::testing::config_error;
using sweeps::testing::contains;
using sweeps::testing::plan_options;
using sweeps::testing::SweepFiles;

// The synthetic base: 1000 training samples (the test plan counts the whole split); batch 64 -> 15
// steps per epoch; epochs 2 -> 30 steps.
std::string spec_text(const std::string& grid, const std::string& search) {
  return "schema_version = 1\n[sweep]\nname = \"bs\"\nexperiment = \"base.toml\"\nseeds = [0, 1]\n"
         "[set]\n\"data.val_size\" = 200\n[grid]\n" +
         grid + "\n[search]\n" + search + "\n";
}

const char* kLarsLamb = R"(rungs = 3
lr_points = 2
[search.knobs]
"schedule.warmup_fraction" = [0.05, 0.2]
[search.when."optim.name=lars"]
"optim.trust_coefficient" = [0.001, 0.01]
[search.when."optim.name=lamb"]
"optim.grad_clip" = [0.0, 1.0]
)";

struct Planned {
  SweepFiles files;
  SweepSpec spec;
  Plan plan;
  BudgetPlan budget;
  Planned(const std::string& grid, const std::string& search)
      : files(spec_text(grid, search)),
        spec(files.spec()),
        plan(expand(spec, plan_options())),
        budget(plan_budget_search(spec, plan, plan_options())) {}
};

TEST(BudgetPlan, EveryLineSearchesTheProductOfItsRatesAndKnobs) {
  Planned p("\"optim.name\" = [\"lars\", \"lamb\"]\n\"batch.global\" = [64, 128]", kLarsLamb);
  ASSERT_EQ(p.budget.cells.size(), 8u);  // 2 seeds x 2 optimizers x 2 batches
  const BudgetCell& lars = p.budget.cells.front();
  EXPECT_EQ(lars.series, "lars");
  EXPECT_EQ(lars.points.size(), 8u);  // 2 rates x 2 warmups x 2 trust coefficients
  ASSERT_EQ(lars.knobs.size(), 3u);
  EXPECT_EQ(lars.knobs[0].key, "optim.base_lr");
  EXPECT_EQ(lars.knobs[0].values, (std::vector<std::string>{"0.5", "1.0"}));
  EXPECT_EQ(lars.knobs[2].key, "optim.trust_coefficient");
  EXPECT_EQ(lars.budget_steps, 30);
  EXPECT_EQ(lars.rung_steps, (std::vector<int64_t>{8, 16, 30}));
  ASSERT_TRUE(lars.epochs);
  EXPECT_DOUBLE_EQ(*lars.epochs, 2.0);
  EXPECT_FALSE(lars.first_seed);
  // The seeds after the first rerun the first seed's cell at the same batch.
  for (size_t c = 4; c < 8; ++c) {
    ASSERT_TRUE(p.budget.cells[c].first_seed);
    EXPECT_EQ(p.budget.cells[*p.budget.cells[c].first_seed].series, p.budget.cells[c].series);
  }
  // The same epochs at every batch: about half the steps at twice the batch (7 x 2).
  EXPECT_EQ(p.budget.cells[1].budget_steps, 14);
}

TEST(BudgetPlan, ATrialIsTheCellsConfigWithThePointEvaluatedAtEveryRung) {
  Planned p("\"optim.name\" = [\"lars\", \"lamb\"]", kLarsLamb);
  const BudgetCell& lars = p.budget.cells.front();
  const BudgetPoint& last = lars.points.back();
  const Job trial = make_budget_trial(p.budget, 0, last);
  EXPECT_DOUBLE_EQ(trial.base_lr, 1.0);
  const auto config = toml::parse(trial.config_toml);
  EXPECT_DOUBLE_EQ(config["optim"]["trust_coefficient"].value_or(0.0), 0.01);
  // The point's warmup replaces the base's warmup_epochs (the schedule takes one of them).
  EXPECT_DOUBLE_EQ(config["schedule"]["warmup_fraction"].value_or(0.0), 0.2);
  EXPECT_FALSE(config["schedule"]["warmup_epochs"]);
  // Evaluations every r_0 = 8 steps: at every rung.
  EXPECT_EQ(config["train"]["eval_every_steps"].value_or(int64_t{0}), 8);
  EXPECT_EQ(config["train"]["checkpoint_every"].value_or(int64_t{0}), 31);
  EXPECT_EQ(config["train"]["full_eval"].value_or(std::string()), "final");
  // Another point, another run id; the same point, the same run id (a promoted point resumes).
  EXPECT_NE(make_budget_trial(p.budget, 0, lars.points.front()).run_id, trial.run_id);
  EXPECT_EQ(make_budget_trial(p.budget, 0, last).run_id, trial.run_id);
}

TEST(BudgetPlan, ABudgetInSamplesIsTheSameSamplesAtEveryBatch) {
  Planned p("\"batch.global\" = [64, 128, 256]",
            "rungs = 2\nlr_points = 1\nbudget_samples = 2048\n");
  ASSERT_EQ(p.budget.cells.size(), 6u);
  EXPECT_EQ(p.budget.cells[0].budget_steps, 32);
  EXPECT_EQ(p.budget.cells[1].budget_steps, 16);
  EXPECT_EQ(p.budget.cells[2].budget_steps, 8);
  EXPECT_EQ(p.budget.cells[2].rung_steps, (std::vector<int64_t>{4, 8}));
  EXPECT_FALSE(p.budget.cells[0].epochs);  // samples, not the base's epochs
  const auto config =
      toml::parse(make_budget_trial(p.budget, 2, p.budget.cells[2].points[0]).config_toml);
  EXPECT_EQ(config["schedule"]["steps"].value_or(int64_t{0}), 8);
  EXPECT_FALSE(config["schedule"]["epochs"]);
}

TEST(BudgetPlan, LinesThatWouldSearchDifferentNumbersOfPointsAreAPlanError) {
  SweepFiles files(spec_text("\"optim.name\" = [\"lars\", \"lamb\"]", R"(lr_points = 2
[search.when."optim.name=lars"]
"optim.trust_coefficient" = [0.001, 0.01]
)"));
  const auto spec = files.spec();
  const auto plan = expand(spec, plan_options());
  const auto message = config_error([&] { plan_budget_search(spec, plan, plan_options()); });
  EXPECT_TRUE(contains(message, "different numbers of points")) << message;
  EXPECT_TRUE(contains(message, "lars 4")) << message;
  EXPECT_TRUE(contains(message, "lamb 2")) << message;
  EXPECT_TRUE(contains(message, "search.points")) << message;
}

TEST(BudgetPlan, PointsCutsEveryLineToAFixedSubsetOfTheSameSize) {
  Planned p("\"optim.name\" = [\"lars\", \"lamb\"]", R"(lr_points = 3
points = 3
[search.when."optim.name=lars"]
"optim.trust_coefficient" = [0.001, 0.01]
)");
  EXPECT_EQ(p.budget.cells[0].points.size(), 3u);
  EXPECT_EQ(p.budget.cells[1].points.size(), 3u);
  // The subset is a function of the line: the same at every batch and in every plan.
  Planned again("\"optim.name\" = [\"lars\", \"lamb\"]", R"(lr_points = 3
points = 3
[search.when."optim.name=lars"]
"optim.trust_coefficient" = [0.001, 0.01]
)");
  EXPECT_EQ(p.budget.cells[0].points[1].describe(), again.budget.cells[0].points[1].describe());
}

TEST(BudgetSpec, EveryProblemIsReportedWithItsPlace) {
  SweepFiles files(spec_text("\"optim.name\" = [\"lars\", \"lamb\"]\n\"optim.momentum\" = [0.9]",
                             R"(metric = "test_loss"
eta = 1
lr_factor = 0.5
method = "random"
rung = 3
[search.knobs]
"optim.base_lr" = [0.1, 0.2]
"optim.momentum" = [0.8, 0.9]
"train.eval_every" = [1]
)"));
  const auto message = config_error([&] { files.spec(); });
  for (const char* part :
       {"search.metric", "must be \"val_loss\" or \"val_acc\"", "search.eta", "search.lr_factor",
        "search.method", "unknown key, did you mean search.rungs?", "optim.base_lr",
        "the search tries the rates itself", "optim.momentum", "is already swept",
        "train.eval_every", "it evaluates at every rung"}) {
    EXPECT_TRUE(contains(message, part)) << part << "\n" << message;
  }
}

TEST(BudgetSpec, AStudyAndASearchCannotShareASpec) {
  SweepFiles files(spec_text("\"optim.name\" = [\"lars\"]",
                             "\n[study]\ntarget = { metric = \"val_loss\", value = 1.0 }\n"));
  const auto message = config_error([&] { files.spec(); });
  EXPECT_TRUE(contains(message, "either [study]")) << message;
}

TEST(BudgetSpec, AWhenConditionMustNameASweptValue) {
  SweepFiles files(
      spec_text("\"optim.name\" = [\"lars\", \"lamb\"]", R"([search.when."optim.name=adam"]
"optim.eps" = [1e-8, 1e-6]
)"));
  const auto message = config_error([&] { files.spec(); });
  EXPECT_TRUE(contains(message, "search.when")) << message;
  EXPECT_TRUE(contains(message, "adam")) << message;
}

}  // namespace budget_plan_test
}  // namespace batchlab::sweeps::study
