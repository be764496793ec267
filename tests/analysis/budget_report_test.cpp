// The fixed-budget search's report and comparison (analysis/budget_report.h) on databases written
// by hand: the best point's edges, the budget per line, intervals called 95% only from 3 seeds,
// and verdicts (per batch under Holm, and on the trend) only where their intervals allow.
#include "analysis/budget_report.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "results/store.h"
#include "tests/cli/cli_runner.h"

namespace batchlab::analysis {
namespace budget_report_test {

struct SearchDb {
  cli::testing::TempDir dir{"budgetreport"};
  std::string path = dir.file("search.db");
  results::Store store{path};

  SearchDb() {
    results::SweepRow sweep;
    sweep.sweep_id = sweep.name = "s";
    store.upsert_sweep(sweep);
  }

  // A cell of `series` at `batch` and `seed` whose best run ended with test loss `loss`.
  void cell(const std::string& series, int64_t batch, int64_t seed, double loss,
            const std::string& best_point = "optim.base_lr = 1\n") {
    const std::string id = fmt::format("{}-{}-{}", series, batch, seed);
    results::BudgetCellRow c;
    c.cell_id = id;
    c.sweep_id = "s";
    c.optimizer = series;
    c.series = series;
    c.global_batch = batch;
    c.seed = seed;
    c.cell_toml = "";
    c.budget_steps = 1024 / batch;
    c.rung_steps = fmt::format("{},{}", 512 / batch, 1024 / batch);
    c.points = seed == 0 ? 4 : 1;
    c.knobs =
        "optim.base_lr = [0.5, 1, 2, 4]\nschedule.warmup_fraction = [0.05, 0.2]\n"
        "optim.always_adapt = [false, true]\n";
    c.status = "done";
    c.best_run_id = "run-" + id;
    c.best_point = best_point;
    if (seed > 0) c.first_seed_cell = fmt::format("{}-{}-0", series, batch);
    c.trials = seed == 0 ? 4 : 1;
    c.samples_trained = (seed == 0 ? 3 : 1) * 1024;
    store.write_budget_cells({c});
    results::RunRow run;
    run.run_id = *c.best_run_id;
    run.status = "done";
    store.upsert_run(run);
    results::EvalRow e;
    e.run_id = run.run_id;
    e.step = c.budget_steps;
    e.epoch = 1.0;
    e.test_loss = loss;
    e.test_acc = 0.5 - loss / 100;
    e.val_loss = loss - 0.01;
    store.write_evals({e});
  }
};

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

TEST(BudgetReport, CompareStatesAVerdictOnlyWhereItsIntervalAllows) {
  SearchDb db;
  // lars rises 0.2 a doubling, lamb is flat; seeds within +-0.01.
  for (int k = 0; k < 4; ++k) {
    const int64_t batch = int64_t{16} << k;
    for (int64_t seed = 0; seed < 3; ++seed) {
      const double jitter = 0.01 * static_cast<double>(seed - 1);
      db.cell("lars", batch, seed, 5.0 + 0.2 * k + jitter);
      db.cell("lamb", batch, seed, 5.0 + jitter);
    }
  }
  const auto report = build_budget_report(db.path);
  const auto c = compare_budget_series(report, "lars", "lamb");
  ASSERT_EQ(c.batches.size(), 4u);
  ASSERT_TRUE(c.trend_difference);
  EXPECT_NEAR(c.trend_difference->per_doubling, 0.2, 1e-9);
  EXPECT_GT(c.trend_difference->low, 0.0);
  // Batch 16 has no difference; 32, 64 and 128 do, and Holm keeps them.
  EXPECT_FALSE(c.batches[0].test_loss->holm_rejects);
  EXPECT_TRUE(c.batches[3].test_loss->holm_rejects);
  bool trend = false;
  for (const auto& v : c.verdicts)
    trend = trend || v.find("lars loses more than lamb") != std::string::npos;
  EXPECT_TRUE(trend) << format_budget_comparison(c, results::QueryFormat::kTable);
  EXPECT_THROW(compare_budget_series(report, "lars", "adamw"), std::invalid_argument);
}

TEST(BudgetReport, TwoSeedsGiveNoVerdict) {
  SearchDb db;
  for (int k = 0; k < 3; ++k) {
    for (int64_t seed = 0; seed < 2; ++seed) {
      db.cell("lars", int64_t{16} << k, seed, 5.0 + 0.5 * k + 0.001 * static_cast<double>(seed));
      db.cell("lamb", int64_t{16} << k, seed, 5.0 + 0.001 * static_cast<double>(seed));
    }
  }
  const auto c = compare_budget_series(build_budget_report(db.path), "lars", "lamb");
  EXPECT_TRUE(c.verdicts.empty());
  const auto text = format_budget_comparison(c, results::QueryFormat::kTable);
  EXPECT_NE(text.find("no interval called 95%"), std::string::npos) << text;
}

}  // namespace budget_report_test
}  // namespace batchlab::analysis
