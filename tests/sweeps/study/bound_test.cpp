// [study.bound]: the cap of a line the reference does not match is at most factor x the steps the
// reference lines' fit predicts at its batch (sweeps/study/plan.h reference_cap); the spec's
// mistakes are named with their position, and the reference must name some lines but not all.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "results/store.h"
#include "sweeps/study/engine.h"
#include "sweeps/study/plan.h"
#include "tests/sweeps/study/fake_source.h"
#include "tests/sweeps/sweep_test_util.h"

namespace batchlab::sweeps::study {
namespace {

using sweeps::testing::config_error;
using sweeps::testing::FakeTrialSource;
using sweeps::testing::SweepFiles;

// Two lines: momentum 0.9 (the reference, centre 0.5) and momentum 0.5 (centre 8).
std::string bound_spec(const std::string& bound) {
  return "schema_version = 1\n[sweep]\nname = \"bd\"\nexperiment = \"base.toml\"\n"
         "[set]\n\"data.val_size\" = 200\n[grid]\n\"optim.momentum\" = [0.9, 0.5]\n"
         "\"batch.global\" = [64, 128, 256, 512]\n"
         "[when.\"optim.momentum=0.5\"]\n\"optim.base_lr\" = 8.0\n"
         "[study]\ntarget = { metric = \"val_acc\", value = 0.8 }\nmax_steps = 1000000\n"
         "lr_points_max = 3\n" +
         bound + "\n";
}

struct BoundHarness {
  SweepFiles files;
  SweepSpec spec;
  Plan plan;
  StudyPlan study;
  results::Store store;

  explicit BoundHarness(const std::string& bound)
      : files(bound_spec(bound)),
        spec(files.spec()),
        plan(expand(spec, sweeps::testing::plan_options())),
        study(plan_study(spec, plan, sweeps::testing::plan_options())),
        store(files.dir.file("study.db")) {}

  // The reference (rates below 4) reaches at S(B) = 10 + 512 / B steps at its best rate 0.5 (1.5x
  // later at the others); the other line (rates from 4 up) never reaches.
  void run() {
    FakeTrialSource source(
        8,
        [](double lr, int64_t batch, int64_t step) {
          if (lr >= 4.0) return 0.5;
          const double reach = (10.0 + 512.0 / static_cast<double>(batch)) * (lr == 0.5 ? 1 : 1.5);
          return std::min(0.99, 0.8 * std::sqrt(static_cast<double>(step) / reach));
        },
        config::Target{"val_acc", 0.8}, spec.study->evals_per_octave, &store);
    StudyObserver quiet;
    StudyEngine engine(study, store, "bd", source, quiet);
    engine.run();
  }
};

TEST(StudyBound, ReadsTheReferenceAndTheFactorAndMarksTheOtherLinesBounded) {
  BoundHarness h("[study.bound]\nreference = \"optim.momentum=0.9\"\nfactor = 2");
  ASSERT_TRUE(h.spec.study->bound);
  EXPECT_EQ(h.spec.study->bound->reference, "optim.momentum=0.9");
  EXPECT_EQ(h.spec.study->bound->factor, 2.0);
  for (const auto& cell : h.study.cells) {
    EXPECT_EQ(cell.bounded, h.study.plan->jobs[cell.job].coordinates[0] == "0.5") << cell.line;
  }
  BoundHarness plain("");
  EXPECT_FALSE(plain.spec.study->bound);
  for (const auto& cell : plain.study.cells) EXPECT_FALSE(cell.bounded);
}

TEST(StudyBound, EveryMistakeIsNamedAtOnce) {
  SweepFiles files(
      bound_spec("[study.bound]\nreference = \"optim.momentum=0.7\"\nfactor = 1\ncap = 3"));
  const std::string msg = config_error([&] { files.spec(); });
  EXPECT_NE(msg.find("study.bound.reference"), std::string::npos) << msg;  // 0.7 is not swept
  EXPECT_NE(msg.find("study.bound.factor"), std::string::npos) << msg;
  EXPECT_NE(msg.find("study.bound.cap"), std::string::npos) << msg;
  SweepFiles missing(bound_spec("[study.bound]\nfactor = 3"));
  const std::string none = config_error([&] { missing.spec(); });
  EXPECT_NE(none.find("give the reference lines as a condition"), std::string::npos) << none;
}

TEST(StudyBound, AReferenceThatNamesEveryLineBoundsNothingAndIsAnError) {
  // Some cells (batch 64 of both lines): fine.
  SweepFiles some(bound_spec("[study.bound]\nreference = \"batch.global=64\""));
  EXPECT_NO_THROW(plan_study(some.spec(), some.plan(), sweeps::testing::plan_options()));
  // One line only, so the reference is every cell.
  SweepFiles all(
      "schema_version = 1\n[sweep]\nname = \"bd\"\nexperiment = \"base.toml\"\n[set]\n"
      "\"data.val_size\" = 200\n[grid]\n\"optim.momentum\" = [0.9]\n\"batch.global\" = [64, 128]\n"
      "[study]\ntarget = { metric = \"val_acc\", value = 0.8 }\nmax_steps = 1000\n"
      "[study.bound]\nreference = \"optim.momentum=0.9\"\n");
  const auto spec = all.spec();
  const auto plan = expand(spec, sweeps::testing::plan_options());
  const std::string msg =
      config_error([&] { plan_study(spec, plan, sweeps::testing::plan_options()); });
  EXPECT_NE(msg.find("matches every cell"), std::string::npos) << msg;
}

TEST(StudyBound, TheReferenceCapIsFactorTimesTheFitAndNeedsThreeBatches) {
  // S(B) = 100 + 51200 / B: S(512) = 200, x 4 = 800.
  std::vector<ReachedPoint> points = {{64, 900}, {128, 500}, {256, 300}};
  EXPECT_EQ(reference_cap(points, 512, 4.0), 800);
  EXPECT_EQ(reference_cap(points, 512, 1.5), 300);
  points.pop_back();
  EXPECT_FALSE(reference_cap(points, 512, 4.0)) << "two batches are not a fit";
}

// A batch inside the reference's range: S(B) = 100 + 51200 / B gives 500 steps at 128, and only
// the smaller batches bound it from below by perfect scaling (S(b) b / B); from a larger batch
// that lies above S(B) (512: 200 x 4 = 800). The text study's bounded LARS at 64 got 4 x 1,126
// steps (LAMB's 141 at 512, times 8) where LAMB's fit gives 4 x 284.
TEST(StudyBound, ABatchInsideTheReferencesRangeIsCappedByTheFitNotByLargerBatches) {
  const std::vector<ReachedPoint> points = {{64, 900}, {128, 500}, {256, 300}, {512, 200}};
  EXPECT_EQ(reference_cap(points, 128, 4.0), 2000);
  EXPECT_EQ(cap_from_fit(points, 128, 10000), 1500);
  // Above the range the fit still decides (S(1024) = 150), and below it too (S(32) = 1700).
  EXPECT_EQ(reference_cap(points, 1024, 4.0), 600);
  EXPECT_EQ(reference_cap(points, 32, 1.0), 1700);
}

TEST(StudyBound, TheOtherLinesCellsAreCappedByTheReferenceOnceItHasAFit) {
  BoundHarness h("[study.bound]\nreference = \"optim.momentum=0.9\"\nfactor = 2");
  h.run();
  std::vector<ReachedPoint> reference;
  std::vector<results::StudyCellRow> bounded;
  for (const auto& c : h.store.read_study_cells("bd")) {
    if (c.lr_center < 4.0) {
      ASSERT_EQ(c.status, "reached") << c.global_batch;
      EXPECT_GT(c.cap_steps, 20) << "the reference's own cap: never the bound";
      reference.push_back({c.global_batch, static_cast<double>(*c.steps_to_target)});
    } else {
      bounded.push_back(c);
    }
  }
  ASSERT_EQ(reference.size(), 4u);
  ASSERT_EQ(bounded.size(), 4u);
  std::sort(bounded.begin(), bounded.end(),
            [](const auto& a, const auto& b) { return a.global_batch < b.global_batch; });
  // Batch 64 opened before the reference had reached anywhere: the study's own cap. The larger
  // batches open once the one below is censored (its trials run 60 evaluations to the cap of 10^6
  // steps), by then the reference has reached at every batch (about 12 evaluations each).
  EXPECT_EQ(bounded[0].cap_steps, 1000000);
  for (size_t i = 1; i < bounded.size(); ++i) {
    const auto& c = bounded[i];
    EXPECT_EQ(c.status, "censored") << c.global_batch;
    EXPECT_EQ(c.cap_steps, reference_cap(reference, c.global_batch, 2.0)) << c.global_batch;
    EXPECT_LT(c.cap_steps, 200) << c.global_batch;
  }
}

TEST(StudyBound, WithoutABoundEveryCellKeepsTheStudysCap) {
  BoundHarness h("");
  h.run();
  for (const auto& c : h.store.read_study_cells("bd")) {
    if (c.lr_center >= 4.0) {
      EXPECT_EQ(c.cap_steps, 1000000) << c.global_batch;
    }
  }
}

}  // namespace
}  // namespace batchlab::sweeps::study
