// analysis/target_ladder.h: the crossing of a target interpolated in log-step (loss down, accuracy
// up), and on the committed text study the ladder's final rung reproducing the stored fits exactly
// while every series' B_crit grows as the target deepens.
#include "analysis/target_ladder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

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

// Every rung's measured 20% batch comes with its spread, named: 95% on the text study's lines
// with 3 seeds at every batch (adamw, lamb, nesterov), a seed range where a batch has fewer (the
// LARS lines' batch 64, seed 0 alone so far) and on the BERT study (2 seeds); "> B" where no batch
// crosses, never a blank.
TEST(TargetLadder, EveryRungsMeasuredTwentyPercentBatchHasItsSpread) {
  const auto data = std::filesystem::path(test_paths::source_dir()) / "docs" / "data";
  for (const auto& [name, kind] :
       {std::pair<std::string, std::string>{"text_scaling_study.db", "95%"},
        {"bert_scaling_study.db", "seed range"}}) {
    const auto report = build_study_report((data / name).string(), {});
    ASSERT_FALSE(report.target_ladder.empty()) << name;
    const auto table = target_ladder_table(report.target_ladder);
    const auto column = [&](const std::string& c) {
      return static_cast<size_t>(std::find(table.columns.begin(), table.columns.end(), c) -
                                 table.columns.begin());
    };
    ASSERT_LT(column("20%_measured_interval"), table.columns.size());
    size_t row = 0;
    for (const auto& rung : report.target_ladder) {
      for (const auto& f : rung.fits) {
        const auto& cells = table.rows[row++];
        if (!f.definitions) continue;
        EXPECT_FALSE(cells[column("20%_measured")].value_or("").empty()) << name << f.series;
        const auto spread = cells[column("20%_measured_interval")].value_or("");
        const auto spread_kind = f.definitions->measured_excess_spread.kind;
        const bool complete = name == "text_scaling_study.db" && f.series.rfind("lars", 0) != 0;
        std::string expected = kind;  // the BERT study: a seed range wherever there is a spread
        if (spread_kind == results::Spread::Kind::kNone) {
          expected = "none: ";
        } else if (!complete && name == "text_scaling_study.db") {
          expected = spread_kind == results::Spread::Kind::kInterval ? "95%" : "seed range";
        }
        EXPECT_EQ(spread.rfind(expected, 0), 0u) << name << " " << f.series << ": " << spread;
      }
    }
    const auto json = target_ladder_json(report.target_ladder);
    EXPECT_EQ(json[0]["fits"][0]["measured_excess_spread"]["kind"], kind) << name;
  }
}

}  // namespace
}  // namespace batchlab::analysis
