// [study] in sweep specs: the defaults, every rule reported with file:line:col before anything
// runs, and the cells and trials a study spec plans.
#include <gtest/gtest.h>

#include "results/scaling_fit.h"
#include "sweeps/study/plan.h"
#include "tests/sweeps/sweep_test_util.h"

namespace batchlab::sweeps {
namespace {

using testing::config_error;
using testing::contains;
using testing::SweepFiles;

// Line 1..7 fixed, [study] on line 8, its keys from line 9 on.
std::string spec(const std::string& grid, const std::string& study_keys,
                 const std::string& extra = "") {
  return "schema_version = 1\n[sweep]\nname = \"s\"\nexperiment = \"base.toml\"\n[set]\n"
         "\"data.val_size\" = 100\n" +
         grid + "\n[study]\n" + study_keys + "\n" + extra;
}

const char* kGrid = "[grid]";  // line 7
const char* kTarget = "target = { metric = \"val_acc\", value = 0.8 }";

TEST(StudySpec, ReadsTheKeysWithTheirDefaults) {
  SweepFiles files(spec("[grid]\n\"batch.global\" = [64, 128]", std::string(kTarget)));
  const auto s = files.spec();
  ASSERT_TRUE(s.study.has_value());
  EXPECT_EQ(s.study->target.metric, "val_acc");
  EXPECT_DOUBLE_EQ(s.study->target.value, 0.8);
  EXPECT_EQ(s.study->lr_factor, 2.0);
  EXPECT_EQ(s.study->lr_points_max, 6);
  EXPECT_FALSE(s.study->lr_center.has_value());
  EXPECT_EQ(s.study->evals_per_octave, 3);
  EXPECT_DOUBLE_EQ(s.study->warmup, 0.05);
  EXPECT_EQ(s.study->prune_min_evals, 3);
  EXPECT_DOUBLE_EQ(s.study->prune_min_fraction, 0.5);
  SweepFiles all(spec(kGrid, std::string(kTarget) +
                                 "\nlr_factor = 3\nlr_points_max = 4\nlr_center = 0.2\n"
                                 "max_samples = 64000\nevals_per_octave = 4\nwarmup = 0.1\n"
                                 "prune_min_evals = 0\nprune_min_fraction = 1"));
  const auto t = all.spec();
  EXPECT_EQ(t.study->lr_factor, 3.0);
  EXPECT_EQ(t.study->lr_points_max, 4);
  EXPECT_EQ(t.study->lr_center, 0.2);
  EXPECT_EQ(t.study->max_samples, 64000);
  EXPECT_EQ(t.study->evals_per_octave, 4);
  EXPECT_DOUBLE_EQ(t.study->warmup, 0.1);
  EXPECT_EQ(t.study->prune_min_evals, 0);
  EXPECT_DOUBLE_EQ(t.study->prune_min_fraction, 1.0);
}

TEST(StudySpec, TheSearchKeysRaceAndLaterSeedsChangeNoCellOrTrial) {
  SweepFiles plain(
      spec("[grid]\n\"batch.global\" = [64, 128]", std::string(kTarget) + "\nmax_steps = 100"));
  SweepFiles varied(
      spec("[grid]\n\"batch.global\" = [64, 128]",
           std::string(kTarget) + "\nmax_steps = 100\nrace = false\nlater_seeds = \"rerun_best\""));
  const auto a = plain.spec();
  const auto b = varied.spec();
  EXPECT_TRUE(a.study->race);
  EXPECT_EQ(a.study->later_seeds, LaterSeeds::search);
  EXPECT_FALSE(b.study->race);
  EXPECT_EQ(b.study->later_seeds, LaterSeeds::rerun_best);
  const auto pa = expand(a, testing::plan_options());
  const auto pb = expand(b, testing::plan_options());
  const auto sa = study::plan_study(a, pa, testing::plan_options());
  const auto sb = study::plan_study(b, pb, testing::plan_options());
  // A plain-grid recording and a raced study of the same spec share cells and trials: the
  // replays of `sweep cost` find every trial of one in the other.
  EXPECT_EQ(sa.cells[1].cell_id, sb.cells[1].cell_id);
  EXPECT_EQ(study::make_trial(sa, 1, 0.5, 100).run_id, study::make_trial(sb, 1, 0.5, 100).run_id);
  SweepFiles bad(spec(kGrid, std::string(kTarget) + "\nrace = 1\nlater_seeds = \"best\""));
  const auto message = config_error([&] { bad.spec(); });
  EXPECT_TRUE(contains(message, "spec.toml:10:8: study.race = 1: must be true")) << message;
  EXPECT_TRUE(
      contains(message,
               "spec.toml:11:15: study.later_seeds = \"best\": must be \"search\" (every seed "
               "searches its own rates), \"neighbours\""))
      << message;
}

TEST(StudySpec, LaterSeedsKnowTheFirstSeedsCellAtTheirBatch) {
  std::string text =
      spec("[grid]\n\"batch.global\" = [64, 128]", std::string(kTarget) + "\nmax_steps = 100");
  text.replace(text.find("[set]"), 5, "seeds = [3, 1]\n[set]");
  SweepFiles seeded(text);
  const auto s = seeded.spec();
  const auto plan = expand(s, testing::plan_options());
  const auto st = study::plan_study(s, plan, testing::plan_options());
  ASSERT_EQ(st.cells.size(), 4u);
  for (size_t c = 0; c < st.cells.size(); ++c) {
    const auto& job = st.job(c);
    if (job.seed == 3) {
      EXPECT_FALSE(st.cells[c].first_seed.has_value()) << c;
      continue;
    }
    ASSERT_TRUE(st.cells[c].first_seed.has_value()) << c;
    const auto& first = st.job(*st.cells[c].first_seed);
    EXPECT_EQ(first.seed, 3) << "the first of [sweep] seeds, not the smallest";
    EXPECT_EQ(first.global_batch, job.global_batch);
  }
}

TEST(StudySpec, BadPruningRulesAreNamed) {
  SweepFiles files(
      spec(kGrid, std::string(kTarget) + "\nprune_min_evals = -1\nprune_min_fraction = 1.5"));
  const auto message = config_error([&] { files.spec(); });
  EXPECT_TRUE(contains(message,
                       "spec.toml:10:19: study.prune_min_evals = -1: must be an integer "
                       ">= 0"))
      << message;
  EXPECT_TRUE(contains(message,
                       "spec.toml:11:22: study.prune_min_fraction = 1.5: must be a "
                       "fraction of the race leader's steps to target in [0, 1]"))
      << message;
}

TEST(StudySpec, UnknownKeyGetsADidYouMeanWithItsPosition) {
  SweepFiles files(spec(kGrid, std::string(kTarget) + "\nlr_point_max = 4"));
  const auto message = config_error([&] { files.spec(); });
  EXPECT_TRUE(contains(message,
                       "spec.toml:10:1: study.lr_point_max = 4: unknown key, did you "
                       "mean study.lr_points_max?"))
      << message;
}

TEST(StudySpec, EveryRuleIsReportedAtOnce) {
  SweepFiles files(spec(kGrid,
                        "target = { metric = \"val_accc\", value = 0.8 }\n"
                        "lr_points_max = 2\nmax_samples = 1000\nmax_steps = 10\nlr_factor = 1\n"
                        "warmup = 1.5"));
  const auto message = config_error([&] { files.spec(); });
  EXPECT_TRUE(contains(message,
                       "spec.toml:9:21: study.target.metric = \"val_accc\": no such "
                       "metric (did you mean val_acc?)"))
      << message;
  EXPECT_TRUE(
      contains(message, "spec.toml:10:17: study.lr_points_max = 2: must be an integer >= 3"))
      << message;
  EXPECT_TRUE(contains(message,
                       "spec.toml:12:13: study.max_steps = 10: give the per-trial cap "
                       "once: max_samples or max_steps, not both"))
      << message;
  EXPECT_TRUE(contains(message, "spec.toml:13:13: study.lr_factor = 1: must be a number > 1"))
      << message;
  EXPECT_TRUE(contains(message, "spec.toml:14:10: study.warmup = 1.5")) << message;
}

TEST(StudySpec, ATestMetricIsRefusedWithTheAdviceToUseAValidationMetric) {
  SweepFiles files(spec(kGrid, "target = { metric = \"test_acc\", value = 0.8 }"));
  const auto message = config_error([&] { files.spec(); });
  EXPECT_TRUE(contains(message, "spec.toml:9:21: study.target.metric = \"test_acc\"")) << message;
  EXPECT_TRUE(contains(message, "use a val_ metric (val_acc or val_loss)")) << message;
  EXPECT_TRUE(contains(message, "data.val_size")) << message;
}

TEST(StudySpec, TheStudyOwnsTheLearningRateAndTheTrialLength) {
  SweepFiles files(spec("[grid]\n\"optim.base_lr\" = [0.1, 0.2]", std::string(kTarget),
                        "[when.\"optim.base_lr=0.1\"]\n\"schedule.epochs\" = 3\n"));
  const auto message = config_error([&] { files.spec(); });
  EXPECT_TRUE(contains(message, "spec.toml:8:1: optim.base_lr: cannot be swept in a study"))
      << message;
  EXPECT_TRUE(contains(message, "schedule.epochs = 3: each trial's length is the study's cap"))
      << message;
  // A fixed learning rate is the first centre, and welcome.
  SweepFiles fixed(spec("[grid]\n\"batch.global\" = [64]", std::string(kTarget),
                        "[when.\"batch.global=64\"]\n\"optim.base_lr\" = 0.3\n"));
  EXPECT_NO_THROW(fixed.spec());
}

TEST(StudySpec, AValidationTargetNeedsAValidationSplit) {
  // Without the [set] of data.val_size: reported at the target, at plan time.
  SweepFiles files(
      "schema_version = 1\n[sweep]\nname = \"s\"\nexperiment = \"base.toml\"\n[grid]\n"
      "\"batch.global\" = [64]\n[study]\ntarget = { metric = \"val_loss\", value = 0.5 }\n"
      "max_steps = 100\n");
  const auto s = files.spec();
  const auto plan = expand(s, testing::plan_options());
  const auto message = config_error([&] { study::plan_study(s, plan, testing::plan_options()); });
  EXPECT_TRUE(contains(message,
                       "spec.toml:8:10: study.target.metric = val_loss: needs a "
                       "validation split"))
      << message;
}

TEST(StudySpec, CellsAreTheGridWithoutTheLearningRateAndTrialsCarryTheStudysSettings) {
  SweepFiles files(
      spec("[grid]\n\"batch.global\" = [64, 128]\n\"optim.name\" = [\"sgd\", "
           "\"nesterov\"]",
           std::string(kTarget) + "\nmax_samples = 12800"));
  const auto s = files.spec();
  const auto plan = expand(s, testing::plan_options());
  const auto st = study::plan_study(s, plan, testing::plan_options());
  ASSERT_EQ(st.cells.size(), 4u);
  // Cells chain along the batch within an optimizer.
  EXPECT_FALSE(st.cells[0].previous.has_value());  // 64 sgd
  EXPECT_FALSE(st.cells[1].previous.has_value());  // 64 nesterov
  EXPECT_EQ(st.cells[2].previous, 0u);             // 128 sgd <- 64 sgd
  EXPECT_EQ(st.cells[3].previous, 1u);
  EXPECT_EQ(st.cells[0].max_cap_steps, 200);
  EXPECT_EQ(st.cells[2].max_cap_steps, 100);
  EXPECT_NE(st.cells[0].cell_id, st.cells[2].cell_id);
  EXPECT_TRUE(contains(st.cells[0].cell_toml, "\"optim.name\" = \"sgd\"")) << st.cells[0].cell_toml;

  const auto a = study::make_trial(st, 0, 0.5, 200);
  const auto b = study::make_trial(st, 0, 1.0, 200);
  EXPECT_NE(a.run_id, b.run_id);
  EXPECT_EQ(a.run_id, study::make_trial(st, 0, 0.5, 200).run_id) << "the same trial, the same id";
  EXPECT_TRUE(contains(a.config_toml, "steps = 200")) << a.config_toml;
  EXPECT_TRUE(contains(a.config_toml, "warmup_steps = 10")) << a.config_toml;
  EXPECT_TRUE(contains(a.config_toml, "decay = \"constant\"")) << a.config_toml;
  EXPECT_TRUE(contains(a.config_toml, "evals_per_octave = 3")) << a.config_toml;
  EXPECT_TRUE(contains(a.config_toml, "full_eval = \"final\"")) << a.config_toml;
  EXPECT_TRUE(contains(a.config_toml, "stop_at_target = true")) << a.config_toml;
  EXPECT_TRUE(contains(a.config_toml, "metric = \"val_acc\"")) << a.config_toml;
  EXPECT_FALSE(contains(a.config_toml, "epochs =")) << a.config_toml;
  EXPECT_EQ(a.derived.total_steps, 200);
  EXPECT_EQ(a.derived.warmup_steps, 10);
  // The seed is part of the cell: both trials share it, so they share weights and data order.
  EXPECT_EQ(a.seed, b.seed);
}

TEST(StudySpec, TheCapFollowsTheFitOnceThreeBatchesReached) {
  // S(B) = 100 + 51200 / B: 3 x S(512) = 3 x 200 = 600.
  std::vector<study::ReachedPoint> points = {{64, 900}, {128, 500}, {256, 300}};
  EXPECT_EQ(study::cap_from_fit(points, 512, 10000), 600);
  EXPECT_EQ(study::cap_from_fit(points, 512, 400), 400) << "never above the study's cap";
  points.pop_back();
  EXPECT_EQ(study::cap_from_fit(points, 512, 10000), 10000) << "two batches are not a fit";
}

TEST(StudySpec, TheCapNeverFallsBelowPerfectScalingFromABatchThatReached) {
  // The text study's Nesterov line of seed 1: 5,151.8, 2,873.8 and 797.2 steps at 16, 32 and 64
  // fall faster than 1/B, so the fit's floor is negative (S_min about -784) and it predicts 18
  // steps at 128: a 55-step cap, where seed 0 needed 439. The largest perfect-scaling prediction
  // from a batch that reached is 32's: 2,873.8 x 32 / 128 = 718.45, so the cap is 2,156.
  const std::vector<study::ReachedPoint> points = {{16, 5151.8}, {32, 2873.8}, {64, 797.2}};
  std::vector<results::FitPoint> fit_points;
  for (const auto& p : points) fit_points.push_back({1.0 * p.batch, p.steps, false, ""});
  const auto fit = results::fit_scaling(fit_points);
  ASSERT_TRUE(fit);
  ASSERT_LT(fit->s_min, 0.0) << "the case the floor is for";
  EXPECT_LT(results::fitted_steps(*fit, 128.0), 20.0);
  EXPECT_EQ(study::cap_from_fit(points, 128, 6000), 2156);
  // Two cells at a batch count as their geometric mean: 16 x sqrt(5000 x 7200) / 128 = 750.
  EXPECT_EQ(study::cap_from_fit({{16, 5000}, {16, 7200}, {32, 2873.8}, {64, 797.2}}, 128, 6000),
            2250);
  // A line whose fit lies above perfect scaling keeps the fit's cap (the test above: 600).
  EXPECT_EQ(study::cap_from_fit({{64, 900}, {128, 500}, {256, 300}}, 512, 10000), 600);
}

TEST(StudySpec, WarmupIsAFractionOfTheCapAndAtLeastFiveSteps) {
  StudySpec s;
  EXPECT_EQ(study::study_warmup_steps(s, 1000), 50);
  EXPECT_EQ(study::study_warmup_steps(s, 40), 5);
  s.warmup = 0;
  EXPECT_EQ(study::study_warmup_steps(s, 1000), 0);
}

}  // namespace
}  // namespace batchlab::sweeps
