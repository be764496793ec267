// The study fit when batch sizes ran with different numbers of seeds (issue 23): one point per
// batch (the geometric mean over its seeds, computed here independently), a batch with a censored
// seed as a censored point, the warning that names an unbalanced series, and the uncertainty in the
// report, its tables and its JSON: a 95% bootstrap interval only with 3 or more seeds at every
// batch (deterministic, every resample counted, "inf" when unbounded), else the per-seed range
// named as such.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "analysis/study_report.h"
#include "tests/analysis/hand_db.h"
#include "tests/cli/cli_runner.h"

namespace batchlab::analysis {
namespace {

using cli::testing::run_batchlab;
using cli::testing::shell_quote;
using cli::testing::TempDir;

struct SeedCell {
  const char* optimizer;
  int batch, seed;
  const char* status;
  double steps;  // steps to target (reached cells)
};

// Only the columns the report reads; cap 5000 steps everywhere.
void write_seed_cells(const std::string& path, const std::vector<SeedCell>& cells) {
  testing::HandDb h(path);
  h.exec(testing::kStudyDdl);
  int n = 0;
  for (const auto& c : cells) {
    const bool reached = std::string(c.status) == "reached";
    h.exec(fmt::format(
        "INSERT INTO study_cells(cell_id, sweep_id, optimizer, global_batch, seed, cell_toml, "
        "target_metric, target_value, lr_center, lr_factor, cap_steps, warmup_steps, status, "
        "steps_to_target) VALUES('c{}', 's', '{}', {}, {}, '\"optim.name\" = \"{}\"\n', "
        "'val_acc', 0.9, 0.1, 2.0, 5000, 10, '{}', {})",
        n++, c.optimizer, c.batch, c.seed, c.optimizer, c.status,
        reached ? fmt::format("{}", c.steps) : "NULL"));
  }
}

const SeriesFit& series_fit(const StudyReport& r, const std::string& series) {
  for (const auto& f : r.fits) {
    if (f.series == series) return f;
  }
  ADD_FAILURE() << "no series " << series;
  return r.fits.front();
}

void expect_same_fit(const results::ScalingFit& got, const results::ScalingFit& want) {
  const auto near = [](double a, double b) { EXPECT_NEAR(a, b, 1e-12 * std::abs(b)); };
  EXPECT_EQ(got.points, want.points);
  EXPECT_EQ(got.batches, want.batches);
  near(got.s_min, want.s_min);
  near(got.e_min, want.e_min);
  ASSERT_TRUE(got.b_crit && want.b_crit && got.b_crit_se && want.b_crit_se);
  near(*got.b_crit, *want.b_crit);
  near(*got.s_min_se, *want.s_min_se);
  near(*got.e_min_se, *want.e_min_se);
  near(*got.b_crit_se, *want.b_crit_se);
}

// Nesterov: three seeds at 64 and 128, one at 256, 512 and 1024 (the Fashion-MNIST study's shape);
// adam: one seed at three batches.
const std::vector<SeedCell> kUnbalanced = {
    {"nesterov", 64, 0, "reached", 1300.0},  {"nesterov", 64, 1, "reached", 1000.0},
    {"nesterov", 64, 2, "reached", 1050.0},  {"nesterov", 128, 0, "reached", 700.0},
    {"nesterov", 128, 1, "reached", 600.0},  {"nesterov", 128, 2, "reached", 620.0},
    {"nesterov", 256, 0, "reached", 300.0},  {"nesterov", 512, 0, "reached", 205.0},
    {"nesterov", 1024, 0, "reached", 160.0}, {"adam", 128, 0, "reached", 610.0},
    {"adam", 512, 0, "reached", 140.0},      {"adam", 2048, 0, "reached", 95.0}};

TEST(StudySeeds, UnbalancedSeedsGiveOnePointPerBatch) {
  TempDir dir("seeds");
  const std::string db = (dir.path / "s.db").string();
  write_seed_cells(db, kUnbalanced);
  const auto r = build_study_report(db, {});
  const SeriesFit& n = series_fit(r, "nesterov");
  ASSERT_TRUE(n.fit);
  // The per-batch geometric means, computed here from the products.
  const std::vector<results::FitPoint> means = {
      {64, std::cbrt(1300.0 * 1000.0 * 1050.0), false, ""},
      {128, std::cbrt(700.0 * 600.0 * 620.0), false, ""},
      {256, 300.0, false, ""},
      {512, 205.0, false, ""},
      {1024, 160.0, false, ""}};
  const auto want = results::fit_scaling(means);
  ASSERT_TRUE(want);
  expect_same_fit(*n.fit, *want);
  EXPECT_EQ(n.fit->points, 5);
  // Every cell a point would have been another fit, 5% off (the test tells the two rules apart).
  std::vector<results::FitPoint> per_cell;
  for (const auto& c : kUnbalanced) {
    if (std::string(c.optimizer) == "nesterov")
      per_cell.push_back({1.0 * c.batch, c.steps, false, ""});
  }
  EXPECT_GT(std::abs(*results::fit_scaling(per_cell)->b_crit / *want->b_crit - 1.0), 0.02);

  ASSERT_EQ(n.batch_seeds.size(), 5u);
  EXPECT_EQ(n.batch_seeds[0].batch, 64);
  EXPECT_EQ(n.batch_seeds[0].seeds, 3);
  EXPECT_EQ(n.batch_seeds[0].reached, 3);
  EXPECT_EQ(n.batch_seeds[2].batch, 256);
  EXPECT_EQ(n.batch_seeds[2].seeds, 1);
  const std::string warning =
      "nesterov: seeds differ across batch sizes (64: 3, 128: 3, 256: 1, 512: 1, 1024: 1): each "
      "batch is one point (the geometric mean over its seeds)";
  EXPECT_NE(std::find(r.warnings.begin(), r.warnings.end(), warning), r.warnings.end());
  for (const auto& w : r.warnings) EXPECT_EQ(w.find("adam: seeds differ"), std::string::npos) << w;

  // One seed at 256 and up: no 95% interval, the range of the per-seed fits instead (seed 0 on
  // five batches, seeds 1 and 2 on 64 and 128), computed here seed by seed.
  EXPECT_FALSE(n.bootstrap);
  ASSERT_TRUE(n.seed_range);
  EXPECT_EQ(n.seed_range->fits, 3);
  double low = 1e300, high = 0.0;
  for (int64_t seed : {0, 1, 2}) {
    std::vector<results::FitPoint> own;
    for (const auto& c : kUnbalanced) {
      if (std::string(c.optimizer) == "nesterov" && c.seed == seed)
        own.push_back({1.0 * c.batch, c.steps, false, ""});
    }
    const auto fit = results::fit_scaling(own);
    ASSERT_TRUE(fit && fit->b_crit);
    low = std::min(low, *fit->b_crit);
    high = std::max(high, *fit->b_crit);
  }
  EXPECT_NEAR(n.seed_range->b_crit.low, low, 1e-9 * low);
  EXPECT_NEAR(n.seed_range->b_crit.high, high, 1e-9 * high);
  const std::string no_interval =
      "nesterov: no 95% interval: a batch size has fewer than 3 seeds (fewest 1), too few to "
      "resample; the interval columns give the seed range (min-max over 3 per-seed fits, not a "
      "confidence interval) and the _se columns the fit's standard errors";
  EXPECT_NE(std::find(r.warnings.begin(), r.warnings.end(), no_interval), r.warnings.end());
  // One-seed adam has neither.
  EXPECT_FALSE(series_fit(r, "adam").bootstrap);
  EXPECT_FALSE(series_fit(r, "adam").seed_range);
  EXPECT_TRUE(series_fit(r, "adam").fit);

  // The fit table names the range as a seed range, nowhere as 95%; the JSON carries it unrounded.
  const auto csv = results::format_csv(study_fit_table(r));
  EXPECT_NE(csv.find("B_crit_interval"), std::string::npos) << csv;
  EXPECT_NE(csv.find(fmt::format("seed range {:.0f}-{:.0f}", low, high)), std::string::npos) << csv;
  EXPECT_EQ(csv.find("95%"), std::string::npos) << csv;
  EXPECT_NE(csv.find("nesterov,5,1-3,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("one seed"), std::string::npos) << csv;  // adam
  const auto j = nlohmann::json::parse(format_study_report(r, results::QueryFormat::kJson));
  bool found = false;
  for (const auto& f : j["fits"]) {
    EXPECT_TRUE(f["bootstrap"].is_null());
    if (f["series"] == "adam") {
      EXPECT_TRUE(f["seed_range"].is_null());
      continue;
    }
    found = true;
    EXPECT_EQ(f["fit"]["points"], 5);
    EXPECT_EQ(f["seed_range"]["fits"], 3);
    EXPECT_EQ(f["seed_range"]["b_crit"][0].get<double>(), n.seed_range->b_crit.low);  // unrounded
    EXPECT_EQ(f["seed_range"]["b_crit"][1].get<double>(), n.seed_range->b_crit.high);
    EXPECT_EQ(f["batch_seeds"][1]["batch"], 128);
    EXPECT_EQ(f["batch_seeds"][1]["seeds"], 3);
    EXPECT_EQ(f["batch_seeds"][4]["seeds"], 1);
  }
  EXPECT_TRUE(found);
  const auto table = run_batchlab("report --db " + shell_quote(db));
  ASSERT_EQ(table.exit_code, 0) << table.output;
  EXPECT_NE(table.output.find("warning: " + warning), std::string::npos) << table.output;
  EXPECT_NE(table.output.find("warning: " + no_interval), std::string::npos) << table.output;
}

// Three seeds at every batch: a 95% interval. lars's steps fall about as 1/B (S_min near 0), so
// resamples without a floor are counted as an unbounded B_crit and the interval has no upper end;
// sgd ran two seeds per batch: a seed range, never a 95% interval.
const std::vector<SeedCell> kThreeSeeds = {
    {"lars", 64, 3, "reached", 1000.0},  {"lars", 64, 7, "reached", 1100.0},
    {"lars", 64, 11, "reached", 950.0},  {"lars", 128, 3, "reached", 520.0},
    {"lars", 128, 7, "reached", 560.0},  {"lars", 128, 11, "reached", 480.0},
    {"lars", 256, 3, "reached", 270.0},  {"lars", 256, 7, "reached", 300.0},
    {"lars", 256, 11, "reached", 250.0}, {"sgd", 64, 0, "reached", 1300.0},
    {"sgd", 64, 1, "reached", 1200.0},   {"sgd", 256, 0, "reached", 500.0},
    {"sgd", 256, 1, "reached", 450.0},   {"sgd", 1024, 0, "reached", 300.0},
    {"sgd", 1024, 1, "reached", 320.0}};

TEST(StudySeeds, ThreeSeedsPerBatchGiveA95PercentIntervalCountingEveryResample) {
  TempDir dir("three-seeds");
  const std::string db = (dir.path / "s.db").string();
  write_seed_cells(db, kThreeSeeds);
  const auto r = build_study_report(db, {});
  const SeriesFit& l = series_fit(r, "lars");
  ASSERT_TRUE(l.fit && l.bootstrap);
  EXPECT_FALSE(l.seed_range);
  EXPECT_EQ(l.bootstrap->min_batch_seeds, 3);
  EXPECT_EQ(l.bootstrap->resamples, results::kSeedResamples);
  EXPECT_GT(l.bootstrap->unbounded, results::kSeedResamples / 40);
  EXPECT_TRUE(std::isinf(l.bootstrap->b_crit.high));
  // Deterministic: the same report twice gives the same interval.
  const auto again = build_study_report(db, {});
  EXPECT_EQ(series_fit(again, "lars").bootstrap->b_crit.low, l.bootstrap->b_crit.low);
  EXPECT_EQ(series_fit(again, "lars").bootstrap->unbounded, l.bootstrap->unbounded);
  const std::string unbounded = fmt::format(
      "lars: {} of {} seed resamples gave no critical batch ({} with S_min <= 0, counted as an "
      "unbounded B_crit; 0 with E_min <= 0, counted as 0); every resample counts, so B_crit's 95% "
      "interval has no upper end",
      l.bootstrap->without_b_crit, results::kSeedResamples, l.bootstrap->unbounded);
  EXPECT_NE(std::find(r.warnings.begin(), r.warnings.end(), unbounded), r.warnings.end());
  const SeriesFit& g = series_fit(r, "sgd");
  ASSERT_TRUE(g.fit && g.seed_range);
  EXPECT_FALSE(g.bootstrap);

  const auto csv = results::format_csv(study_fit_table(r));
  EXPECT_NE(csv.find(fmt::format("95% {:.0f}-inf", l.bootstrap->b_crit.low)), std::string::npos)
      << csv;
  const auto sgd_row = csv.substr(csv.find("\nsgd,"));
  EXPECT_EQ(sgd_row.find("95%"), std::string::npos) << csv;
  EXPECT_NE(sgd_row.find("seed range "), std::string::npos) << csv;
  const auto j = nlohmann::json::parse(format_study_report(r, results::QueryFormat::kJson));
  for (const auto& f : j["fits"]) {
    if (f["series"] != "lars") continue;
    EXPECT_EQ(f["bootstrap"]["b_crit"][0].get<double>(), l.bootstrap->b_crit.low);
    EXPECT_TRUE(f["bootstrap"]["b_crit"][1].is_null());  // unbounded
    EXPECT_EQ(f["bootstrap"]["unbounded"], l.bootstrap->unbounded);
    EXPECT_EQ(f["bootstrap"]["band"].size(), static_cast<size_t>(results::kBandPoints));
  }
}

TEST(StudySeeds, ACensoredSeedMakesTheBatchACensoredPoint) {
  // At 1024 seed 0 reached and seed 1 did not within the cap: the batch is out of the fit (a mean
  // of the seeds that reached would be too low). At 2048 seed 1 is still searching: seed 0's cell
  // is the point until it finishes.
  TempDir dir("censored-seed");
  const std::string db = (dir.path / "s.db").string();
  write_seed_cells(db, {{"lars", 64, 0, "reached", 1000.0},
                        {"lars", 128, 0, "reached", 560.0},
                        {"lars", 256, 0, "reached", 330.0},
                        {"lars", 512, 0, "reached", 230.0},
                        {"lars", 1024, 0, "reached", 160.0},
                        {"lars", 1024, 1, "censored", 0.0},
                        {"lars", 2048, 0, "reached", 140.0},
                        {"lars", 2048, 1, "searching", 0.0}});
  const auto r = build_study_report(db, {});
  const SeriesFit& f = series_fit(r, "lars");
  ASSERT_TRUE(f.fit);
  EXPECT_EQ(f.fit->excluded, std::vector<std::string>{"batch 1024 (1 of 2 seeds reached)"});
  EXPECT_EQ(f.searching, std::vector<std::string>{"batch 2048 seed 1"});
  const auto want =
      results::fit_scaling({{64, 1000.0, false, ""},
                            {128, 560.0, false, ""},
                            {256, 330.0, false, ""},
                            {512, 230.0, false, ""},
                            {2048, 140.0, false, ""},
                            {1024, 5000.0, true, "batch 1024 (1 of 2 seeds reached)"}});
  ASSERT_TRUE(want);
  expect_same_fit(*f.fit, *want);
  ASSERT_EQ(f.batch_seeds.size(), 6u);
  EXPECT_EQ(f.batch_seeds[4].batch, 1024);
  EXPECT_EQ(f.batch_seeds[4].seeds, 2);
  EXPECT_EQ(f.batch_seeds[4].reached, 1);
  // Seed 1 reached nowhere the fit keeps: no interval, and one seed is no range either.
  EXPECT_FALSE(f.bootstrap);
  EXPECT_FALSE(f.seed_range);
  const std::string warning =
      "lars: censored batches left out of the fit: batch 1024 (1 of 2 seeds reached)";
  EXPECT_NE(std::find(r.warnings.begin(), r.warnings.end(), warning), r.warnings.end());
  // Two seeds at 1024 in the design: flagged, without an interval to point to. 2048, with a seed
  // still searching, is left out of the warning (a ladder opens a batch's later seeds after its
  // first, so it would flag every new batch of a running study).
  EXPECT_EQ(f.batch_seeds[5].searching, 1);
  EXPECT_EQ(f.batch_seeds[4].searching, 0);
  const std::string unequal =
      "lars: seeds differ across batch sizes (64: 1, 128: 1, 256: 1, 512: 1, 1024: 2): each batch "
      "is one point (the geometric mean over its seeds)";
  EXPECT_NE(std::find(r.warnings.begin(), r.warnings.end(), unequal), r.warnings.end());
  const auto csv = results::format_csv(study_fit_table(r));
  // The seeds column counts the seeds of the batches the fit uses (one each here), the count that
  // decides what its interval may be called, not the 2 of the censored batch left out.
  EXPECT_NE(csv.find("lars,5,1,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("one seed"), std::string::npos) << csv;
}

}  // namespace
}  // namespace batchlab::analysis
