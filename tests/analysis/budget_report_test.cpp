// The fixed-budget search's report and comparison (analysis/budget_report.h) on databases written
// by hand: the best point's edges, the budget per line, intervals called 95% only from 3 seeds,
// and verdicts (per batch under Holm, and on the trend) only where their intervals allow.
#include "analysis/budget_report.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

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
            const std::string& best_point = "optim.base_lr = 1\n",
            std::optional<std::string> config_toml = std::nullopt) {
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
    run.config_toml = std::move(config_toml);
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

// A best run's resolved config: `name` with warmup share `warmup` (searched per batch) and a
// weight decay that is the same everywhere.
std::string budget_config(const std::string& name, double warmup, double grad_clip) {
  return fmt::format(
      "schema_version = 1\n[optim]\nname = \"{}\"\nweight_decay = 0.01\ngrad_clip = {}\n"
      "[schedule]\nwarmup_fraction = {}\nsteps = 100\n",
      name, grad_clip, warmup);
}

// compare prints, before its verdicts, the settings in which the two lines' best runs differ (the
// steps-to-target compare does the same): the optimizer, the clipping both chose, and LARS's
// warmup chosen per batch against LAMB's one value; the weight decay they share is not listed.
TEST(BudgetReport, CompareStatesTheSettingsInWhichTheBestRunsDifferBeforeItsVerdicts) {
  SearchDb db;
  for (int k = 0; k < 2; ++k) {
    const int64_t batch = int64_t{16} << k;
    for (int64_t seed = 0; seed < 3; ++seed) {
      const double jitter = 0.01 * static_cast<double>(seed - 1);
      db.cell("lars", batch, seed, 5.5 + jitter, "optim.base_lr = 1\n",
              budget_config("lars", k == 0 ? 0.025 : 0.1, 0.0));
      db.cell("lamb", batch, seed, 5.0 + jitter, "optim.base_lr = 1\n",
              budget_config("lamb", 0.025, 1.0));
    }
  }
  const auto c = compare_budget_series(build_budget_report(db.path), "lars", "lamb");
  ASSERT_TRUE(c.settings_known);
  std::map<std::string, SettingDiff> diffs;
  for (const auto& d : c.settings) diffs[d.key] = d;
  ASSERT_TRUE(diffs.count("optimizer"));
  EXPECT_EQ(diffs["optimizer"].a, "lars");
  EXPECT_EQ(diffs["optimizer"].b, "lamb");
  ASSERT_TRUE(diffs.count("grad_clip"));
  ASSERT_TRUE(diffs.count("warmup"));
  EXPECT_NE(diffs["warmup"].a.find("per cell"), std::string::npos) << diffs["warmup"].a;
  EXPECT_FALSE(diffs.count("weight_decay"));
  const auto text = format_budget_comparison(c, results::QueryFormat::kTable);
  const auto settings_at = text.find("Settings in which A and B differ");
  ASSERT_NE(settings_at, std::string::npos) << text;
  EXPECT_LT(settings_at, text.find("verdicts:")) << text;
  EXPECT_LT(settings_at, text.find("test loss lars - lamb")) << text;
  const auto json = nlohmann::json::parse(format_budget_comparison(c, results::QueryFormat::kJson));
  ASSERT_TRUE(json["settings_differ"].is_array());
  EXPECT_EQ(json["settings_differ"].size(), c.settings.size());
}

// Without resolved configs the compare says it cannot tell whether the lines were treated alike.
TEST(BudgetReport, CompareSaysTheSettingsAreUnknownWithoutConfigs) {
  SearchDb db;
  db.cell("lars", 16, 0, 5.5);
  db.cell("lamb", 16, 0, 5.0);
  const auto c = compare_budget_series(build_budget_report(db.path), "lars", "lamb");
  EXPECT_FALSE(c.settings_known);
  EXPECT_NE(format_budget_comparison(c, results::QueryFormat::kTable).find("Settings: unknown"),
            std::string::npos);
}

}  // namespace budget_report_test
}  // namespace batchlab::analysis
