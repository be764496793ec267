// The fixed-budget search's report (analysis/budget_report.h) on databases written by hand: the
// best point's edges, the budget per line, intervals called 95% only from 3 seeds.
#include "analysis/budget_report.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "tests/analysis/budget_search_db.h"

namespace batchlab::analysis {
namespace budget_report_test {

using budget_testing::SearchDb;

TEST(BudgetReport, TheBestPointsEdgesTheBudgetAndSeedIntervals) {
  SearchDb db;
  for (int64_t seed = 0; seed < 3; ++seed) {
    db.cell("lars", 16, seed, 5.0 + 0.01 * static_cast<double>(seed),
            "optim.base_lr = 4\nschedule.warmup_fraction = 0.05\noptim.always_adapt = true\n");
  }
  db.cell("lars", 64, 0, 5.5);
  db.cell("lars", 64, 1, 5.6);
  ASSERT_TRUE(has_budget_search(db.path));
  const auto report = build_budget_report(db.path);
  ASSERT_EQ(report.series.size(), 1u);
  const auto& lars = report.series[0];
  ASSERT_EQ(lars.batches.size(), 2u);
  const auto& b16 = lars.batches[0];
  ASSERT_EQ(b16.knobs.size(), 3u);
  EXPECT_EQ(b16.knobs[0].edge, "high");          // rate 4, the largest tried
  EXPECT_EQ(b16.knobs[1].edge, "low");           // warmup 0.05, the smallest
  EXPECT_EQ(b16.knobs[2].edge, "");              // a switch has no edge
  EXPECT_DOUBLE_EQ(b16.run_equivalents(), 3.0);  // 3 x 1024 samples over one run's 1024
  EXPECT_EQ(b16.rerun_samples, 2048);
  ASSERT_TRUE(b16.test_loss);
  EXPECT_TRUE(b16.test_loss->is_95);
  EXPECT_NEAR(b16.test_loss->mean, 5.01, 1e-12);
  EXPECT_FALSE(lars.batches[1].test_loss->is_95);  // 2 seeds: their range
  EXPECT_EQ(lars.trials, 11);  // 4 + 1 + 1 at batch 16, 4 + 1 at 64: searches and reruns
  const auto text = format_budget_report(report, results::QueryFormat::kTable);
  EXPECT_NE(text.find("base_lr=4*"), std::string::npos) << text;
  EXPECT_NE(text.find("range"), std::string::npos) << text;
  EXPECT_NE(text.find("not 95%: <3 seeds"), std::string::npos) << text;
}

}  // namespace budget_report_test
}  // namespace batchlab::analysis
