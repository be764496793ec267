// `batchlab compare` on a fixed-budget search (analysis/budget_compare.h), on databases written by
// hand: verdicts per batch and on the trend only where Holm over both allows, the settings in
// which the lines differ, and a line against one batch of another (a batch-size ramp against the
// best fixed batch, chosen on held-out loss).
#include "analysis/budget_compare.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>

#include "tests/analysis/budget_search_db.h"

namespace batchlab::analysis {
namespace budget_compare_test {

using budget_testing::SearchDb;

TEST(BudgetCompare, StatesAVerdictOnlyWhereItsIntervalAllows) {
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
  // The trend is one more test of the family, not a verdict at its own 95% beside it.
  EXPECT_EQ(c.family, 5u);
  EXPECT_LT(c.trend_difference->p, 0.01);
  EXPECT_TRUE(c.trend_difference->holm_rejects);
  EXPECT_NEAR(c.trend_difference->per_doubling, 0.2, 1e-9);
  EXPECT_GT(c.trend_difference->low, 0.0);
  // Batch 16 has no difference; 32, 64 and 128 do, and Holm keeps them.
  EXPECT_FALSE(c.batches[0].test_loss->holm_rejects);
  EXPECT_TRUE(c.batches[3].test_loss->holm_rejects);
  bool trend = false;
  for (const auto& v : c.verdicts)
    trend = trend || (v.find("lars loses more than lamb") != std::string::npos &&
                      v.find("Holm over 5 tests (4 batches and the trend)") != std::string::npos);
  EXPECT_TRUE(trend) << format_budget_comparison(c, results::QueryFormat::kTable);
  EXPECT_THROW(compare_budget_series(report, "lars", "adamw"), std::invalid_argument);
}

TEST(BudgetCompare, TwoSeedsGiveNoVerdict) {
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
TEST(BudgetCompare, StatesTheSettingsInWhichTheBestRunsDifferBeforeItsVerdicts) {
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
TEST(BudgetCompare, SaysTheSettingsAreUnknownWithoutConfigs) {
  SearchDb db;
  db.cell("lars", 16, 0, 5.5);
  db.cell("lamb", 16, 0, 5.0);
  const auto c = compare_budget_series(build_budget_report(db.path), "lars", "lamb");
  EXPECT_FALSE(c.settings_known);
  EXPECT_NE(format_budget_comparison(c, results::QueryFormat::kTable).find("Settings: unknown"),
            std::string::npos);
}

// Fixed batches 32-256 (ramp_start 0) and ramps from 32 to 64-256, 3 seeds. The fixed line's
// test loss is lowest at 32 but its validation loss at 64: the baseline is chosen on held-out data,
// so every ramp meets fixed 64. The ramp to 256 ends 0.3 nats above it; the ramp to 64 matches it.
struct RampDb : SearchDb {
  RampDb() {
    const std::map<int64_t, double> fixed_test = {{32, 4.90}, {64, 5.00}, {128, 5.10}, {256, 5.20}};
    for (const auto& [batch, loss] : fixed_test) {
      for (int64_t seed = 0; seed < 3; ++seed) {
        val_shift = batch == 64 ? -0.30 : -0.01;
        cell("fixed", batch, seed, loss + 0.01 * static_cast<double>(seed - 1));
      }
    }
    val_shift = -0.01;
    const std::map<int64_t, std::pair<double, int64_t>> ramp = {
        {64, {5.00, 2951}}, {128, {5.05, 1828}}, {256, {5.30, 1325}}};
    for (const auto& [batch, loss_steps] : ramp) {
      for (int64_t seed = 0; seed < 3; ++seed) {
        cell_with_steps("ramp", batch, seed,
                        loss_steps.first + 0.01 * static_cast<double>(seed - 1), loss_steps.second);
      }
    }
  }
};

TEST(BudgetCompare, ARampMeetsTheBestFixedBatchChosenOnHeldOutLoss) {
  RampDb db;
  const auto c = compare_budget_series(build_budget_report(db.path), "ramp", "fixed",
                                       {BudgetBaseline::Kind::kBest, 0});
  ASSERT_EQ(c.batches.size(), 3u);
  for (const auto& row : c.batches) {
    EXPECT_EQ(row.b_batch, 64) << row.batch;  // not 32, whose test loss is lower
    EXPECT_EQ(row.b_steps, 1024 / 64);
  }
  EXPECT_EQ(c.batches[2].a_steps, 1325);
  EXPECT_NE(c.baseline_rule.find("fixed's best batch on held-out data: 64"), std::string::npos)
      << c.baseline_rule;
  EXPECT_FALSE(c.trend_difference);  // B is held at one batch
  EXPECT_EQ(c.family, 3u);
  EXPECT_FALSE(c.batches[0].test_loss->holm_rejects);  // the ramp to 64 matches it
  ASSERT_TRUE(c.batches[2].test_loss);
  EXPECT_NEAR(c.batches[2].test_loss->estimate, 0.30, 1e-9);
  EXPECT_TRUE(c.batches[2].test_loss->holm_rejects);
  ASSERT_FALSE(c.verdicts.empty());
  EXPECT_NE(c.verdicts.back().find("ramp at batch 256 (1325 steps) ends with a higher test loss "
                                   "than fixed at batch 64 (16 steps"),
            std::string::npos)
      << c.verdicts.back();
  const auto text = format_budget_comparison(c, results::QueryFormat::kTable);
  EXPECT_NE(text.find("trend: none (fixed is held at batch 64"), std::string::npos) << text;
  EXPECT_NE(text.find("1325 / 16"), std::string::npos) << text;
  const auto json = nlohmann::json::parse(format_budget_comparison(c, results::QueryFormat::kJson));
  EXPECT_EQ(json["baseline"]["kind"], "best");
  EXPECT_EQ(json["batches"][2]["b_batch"], 64);
  EXPECT_EQ(json["batches"][2]["a_steps"], 1325);
}

// The best batch is one whose search is done, among those with the most seeds: a batch measured on
// fewer seeds (or still searching) with a lower mean does not win.
TEST(BudgetCompare, TheBestBatchIsAFinishedOneWithEverySeed) {
  RampDb db;
  db.val_shift = -1.0;
  db.cell("fixed", 512, 0, 5.5);  // the lowest validation loss, one seed
  auto c = compare_budget_series(build_budget_report(db.path), "ramp", "fixed",
                                 {BudgetBaseline::Kind::kBest, 0});
  EXPECT_EQ(c.batches.front().b_batch, 64);
  EXPECT_NE(c.baseline_rule.find("over 3 seeds"), std::string::npos) << c.baseline_rule;
}

TEST(BudgetCompare, OneBatchOfBAgainstEveryBatchOfA) {
  RampDb db;
  const auto report = build_budget_report(db.path);
  const auto c =
      compare_budget_series(report, "ramp", "fixed", {BudgetBaseline::Kind::kBatch, 128});
  ASSERT_EQ(c.batches.size(), 3u);
  EXPECT_EQ(c.batches[0].b_batch, 128);
  EXPECT_NEAR(c.batches[0].test_loss->estimate, -0.10, 1e-9);
  try {
    compare_budget_series(report, "ramp", "fixed", {BudgetBaseline::Kind::kBatch, 48});
    FAIL() << "batch 48 is not a batch of fixed";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(
        std::string(e.what()).find("fixed has no cell at that batch; it has 32, 64, 128, 256"),
        std::string::npos)
        << e.what();
  }
}

TEST(BudgetCompare, TheBaselineIsBestOrABatchSize) {
  EXPECT_EQ(parse_budget_baseline("best")->kind, BudgetBaseline::Kind::kBest);
  const auto b = parse_budget_baseline("256");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->kind, BudgetBaseline::Kind::kBatch);
  EXPECT_EQ(b->batch, 256);
  for (const std::string bad : {"", "0", "-4", "1e3", "64x", "Best", "99999999999"})
    EXPECT_FALSE(parse_budget_baseline(bad)) << bad;
}

}  // namespace budget_compare_test
}  // namespace batchlab::analysis
