// analysis/run_equivalents.h: a study's cost per series and batch in runs of the first seed's
// winning trial, with and without the later seeds; a censored batch counted in runs to the cap;
// a batch still searching without a unit; the report's table and JSON.
#include "analysis/run_equivalents.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "analysis/study_report.h"

namespace batchlab::analysis {
namespace {

StudyCellRecord cell(const std::string& id, int64_t batch, int64_t seed, const std::string& status,
                     std::optional<std::string> best) {
  StudyCellRecord c;
  c.cell_id = id;
  c.sweep_id = "s";
  c.optimizer = "lamb";
  c.global_batch = batch;
  c.seed = seed;
  c.target.metric = "val_loss";
  c.target.value = 5.8;
  c.cap_steps = 100;
  c.status = status;
  c.best_run_id = best;
  if (status == "reached") c.steps_to_target = 10.0;
  return c;
}

StudyTrialRecord trial(const std::string& run, const std::string& cell_id, int64_t samples,
                       int64_t cap) {
  StudyTrialRecord t;
  t.run_id = run;
  t.cell_id = cell_id;
  t.outcome = "reached";
  t.samples_trained = samples;
  t.cap_samples = cap;
  return t;
}

StudyRecords records() {
  StudyRecords r;
  // Batch 64: seed 0 searched three rates (its winner r0 trained 1000 samples), seed 1 reran one.
  r.cells = {cell("a", 64, 0, "reached", "r0"), cell("b", 64, 1, "reached", "r3"),
             cell("c", 128, 0, "censored", std::nullopt),
             cell("d", 256, 0, "searching", std::nullopt)};
  r.trials = {trial("r0", "a", 1000, 6400),   trial("r1", "a", 1000, 6400),
              trial("r2", "a", 500, 6400),    trial("r3", "b", 1200, 6400),
              trial("r4", "c", 12800, 12800), trial("r5", "c", 12800, 12800),
              trial("r6", "d", 700, 25600)};
  return r;
}

TEST(RunEquivalents, CountsTheStudysSamplesInRunsOfTheFirstSeedsWinner) {
  const auto report = study_report_of(records());
  const auto& rows = report.run_equivalents;
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].batch, 64);
  EXPECT_EQ(rows[0].seeds, 2);
  EXPECT_EQ(rows[0].first_trials, 3);
  EXPECT_EQ(rows[0].all_trials, 4);
  EXPECT_EQ(rows[0].unit, 1000);
  EXPECT_DOUBLE_EQ(*rows[0].first, 2.5);  // (1000 + 1000 + 500) / 1000
  EXPECT_DOUBLE_EQ(*rows[0].all, 3.7);    // with seed 1's 1200
  EXPECT_FALSE(rows[0].unit_is_cap);
  // Censored: no winner; two runs to the cap.
  EXPECT_TRUE(rows[1].unit_is_cap);
  EXPECT_DOUBLE_EQ(*rows[1].first, 2.0);
  // Still searching: no unit yet.
  EXPECT_FALSE(rows[2].unit);
  EXPECT_FALSE(rows[2].first);
}

TEST(RunEquivalents, TheReportPrintsAndSerializesThem) {
  const auto report = study_report_of(records());
  const std::string text = format_study_report(report, results::QueryFormat::kTable);
  EXPECT_NE(text.find("full-run equivalents"), std::string::npos) << text;
  EXPECT_NE(text.find("a run to the cap (censored)"), std::string::npos) << text;
  const auto json = nlohmann::json::parse(format_study_report(report, results::QueryFormat::kJson));
  EXPECT_DOUBLE_EQ(json["run_equivalents"][0]["runs_all_seeds"].get<double>(), 3.7);
  EXPECT_TRUE(json["run_equivalents"][2]["runs_first_seed"].is_null());
}

}  // namespace
}  // namespace batchlab::analysis
