// analysis/target_ladder.h: the crossing of a target interpolated in log-step (loss down, accuracy
// up), and on the committed text study the ladder's final rung reproducing the stored fits exactly
// while every series' B_crit grows as the target deepens.
#include "analysis/target_ladder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "analysis/study_report.h"
#include "tests/test_paths.h"

namespace batchlab::analysis {
namespace {

TEST(TargetLadder, TheCrossingIsInterpolatedInLogStepBetweenTheEvaluationsAroundIt) {
  // The text study's LAMB at batch 64, seed 0: 5.8506 at 256, 5.7772 at 305; its stored crossing
  // of 5.8 is 288.82 steps.
  const std::vector<std::pair<double, double>> curve = {{153, 6.12559795379639},
                                                        {216, 5.9233865737915},
                                                        {256, 5.85056829452515},
                                                        {305, 5.7771577835083}};
  EXPECT_NEAR(*crossing_step(curve, 5.8, true), 288.824, 1e-3);
  EXPECT_DOUBLE_EQ(*crossing_step(curve, 6.2, true), 153.0);  // already past at the first
  EXPECT_FALSE(crossing_step(curve, 5.5, true));
  // An accuracy rises to its target: 0.5 at 100, 0.7 at 400 -> 0.6 halfway in log step.
  EXPECT_NEAR(*crossing_step({{100, 0.5}, {400, 0.7}}, 0.6, false), 200.0, 1e-9);
}

TEST(TargetLadder, OnTheTextStudyTheFinalRungIsTheReportsFitAndBCritGrowsWithDepth) {
  const auto db =
      std::filesystem::path(test_paths::source_dir()) / "docs" / "data" / "text_scaling_study.db";
  const auto report = build_study_report(db.string(), {});
  ASSERT_EQ(report.target_ladder.size(), std::size(kTargetLadder));
  const auto& final_rung = report.target_ladder.front();
  EXPECT_EQ(final_rung.target, 5.8);
  for (const auto& fit : report.fits) {
    for (const auto& rung_fit : final_rung.fits) {
      if (rung_fit.series != fit.series || !fit.fit) continue;
      EXPECT_NEAR(*rung_fit.b_crit, *fit.fit->b_crit, 1e-6 * *fit.fit->b_crit) << fit.series;
    }
  }
  for (const std::string series : {"lamb", "adamw", "nesterov"}) {
    std::vector<double> b_crit;  // from the final target to the shallowest
    for (const auto& rung : report.target_ladder) {
      for (const auto& f : rung.fits) {
        if (f.series == series) b_crit.push_back(f.b_crit.value_or(0.0));
      }
    }
    ASSERT_EQ(b_crit.size(), report.target_ladder.size());
    EXPECT_GT(b_crit.front(), b_crit.back()) << series;  // deeper target, larger critical batch
  }
  EXPECT_TRUE(report.target_ladder[1].target > 5.8);  // a loss: shallower is higher
  const auto json = nlohmann::json::parse(format_study_report(report, results::QueryFormat::kJson));
  EXPECT_EQ(json["target_ladder"].size(), report.target_ladder.size());
}

}  // namespace
}  // namespace batchlab::analysis
