// `batchlab compare` (analysis/study_compare.h): per-batch ratios of steps to target with Welch's
// 95% interval over the seeds (recomputed here from the numbers written), seed ranges and no
// verdict below 3 seeds, no ratio for a censored batch, fit ratios of S_min and B_crit, the verdict
// sentences, and the command's errors and output on every committed study database.
#include "analysis/study_compare.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "analysis/study_report.h"
#include "core/errors.h"
#include "tests/analysis/hand_db.h"
#include "tests/cli/cli_runner.h"

namespace batchlab::analysis {
namespace {

using cli::testing::contains;
using cli::testing::run_batchlab;
using cli::testing::shell_quote;
using cli::testing::TempDir;

struct CompareCell {
  std::string optimizer;
  int batch, seed;
  std::string status;
  double steps;
};

void write_compare_cells(const std::string& path, const std::vector<CompareCell>& cells) {
  testing::HandDb h(path);
  h.exec(testing::kStudyDdl);
  int n = 0;
  for (const auto& c : cells) {
    const bool reached = c.status == "reached";
    h.exec(fmt::format(
        "INSERT INTO study_cells(cell_id, sweep_id, optimizer, global_batch, seed, cell_toml, "
        "target_metric, target_value, lr_center, lr_factor, cap_steps, warmup_steps, status, "
        "steps_to_target) VALUES('k{}', 's', '{}', {}, {}, '\"optim.name\" = \"{}\"\n', "
        "'val_loss', 5.8, 0.1, 2.0, 4000, 10, '{}', {})",
        n++, c.optimizer, c.batch, c.seed, c.optimizer, c.status,
        reached ? fmt::format("{}", c.steps) : "NULL"));
  }
}

// S(B) = s_min + e_min / B times a seed factor.
double curve(double s_min, double e_min, double batch) { return s_min + e_min / batch; }

// lamb: S_min 100, E_min 6400 (B_crit 64); lars: 2.5x lamb's steps at every batch (the same
// B_crit, S_min 2.5x). Seed factors exp(-0.05, 0, 0.05): equal spread on both sides.
std::vector<CompareCell> three_seed_cells(double lars_factor) {
  std::vector<CompareCell> cells;
  const double deviation[3] = {-0.05, 0.0, 0.05};
  for (int batch : {16, 32, 64, 128, 256}) {
    for (int seed = 0; seed < 3; ++seed) {
      const double s = curve(100, 6400, batch) * std::exp(deviation[seed]);
      cells.push_back({"lamb", batch, seed, "reached", s});
      // lars's deviations in the other order, so the sides are not identical copies.
      const double l = curve(100, 6400, batch) * lars_factor * std::exp(deviation[2 - seed]);
      cells.push_back({"lars", batch, seed, "reached", l});
    }
  }
  return cells;
}

TEST(StudyCompare, ThreeSeedsASideGiveWelchsIntervalAndAVerdictWhereItExcludesOne) {
  TempDir tmp;
  const std::string db = tmp.file("s.db");
  write_compare_cells(db, three_seed_cells(2.5));
  const auto c = compare_study_series(db, "lars", "lamb");
  ASSERT_EQ(c.batches.size(), 5u);
  // Equal spreads of 3 seeds: Welch's dof = 4, t = 2.776445; the log deviations' variance is
  // (0.05^2 + 0 + 0.05^2) / 2 = 0.0025, so the standard error of the difference is
  // sqrt(2 x 0.0025 / 3).
  const double se = std::sqrt(2 * 0.0025 / 3), t = 2.7764451;
  for (const auto& row : c.batches) {
    EXPECT_EQ(row.a.seeds, 3);
    EXPECT_EQ(row.b.reached, 3);
    ASSERT_TRUE(row.steps.ratio);
    EXPECT_NEAR(*row.steps.ratio, 2.5, 1e-9);
    EXPECT_EQ(row.steps.kind, RatioKind::kConfidence95);
    EXPECT_NEAR(row.steps.interval.low, 2.5 * std::exp(-t * se), 1e-6);
    EXPECT_NEAR(row.steps.interval.high, 2.5 * std::exp(t * se), 1e-6);
    EXPECT_EQ(row.steps.verdict, Verdict::kAHigher);
    EXPECT_NEAR(*row.a.steps, curve(100, 6400, row.batch) * 2.5, 1e-9);
  }
  ASSERT_FALSE(c.verdicts.empty());
  EXPECT_EQ(c.verdicts.front().rfind("lars slower than lamb (more steps to target) at batch "
                                     "16-256: 2.50x",
                                     0),
            0u)
      << c.verdicts.front();
  // The curves differ by a constant factor: S_min 2.5x, B_crit the same (no verdict on it).
  ASSERT_TRUE(c.s_min.ratio && c.b_crit.ratio);
  EXPECT_NEAR(*c.s_min.ratio, 2.5, 1e-6);
  EXPECT_NEAR(*c.b_crit.ratio, 1.0, 1e-6);
  EXPECT_EQ(c.s_min.kind, RatioKind::kConfidence95);
  EXPECT_EQ(c.s_min.verdict, Verdict::kAHigher);
  EXPECT_LT(c.b_crit.interval.low, 1.0);
  EXPECT_GT(c.b_crit.interval.high, 1.0);
  EXPECT_EQ(c.b_crit.verdict, Verdict::kNone);
  EXPECT_EQ(c.b_crit.why, "95% interval includes 1");
  // Both curves pass through their batches' means: no lack of fit to caveat.
  EXPECT_EQ(c.fit_caveat, "");
}

// A series whose steps fall 3x and 4x a doubling, then flatten, is fitted by S_min + E_min/B
// anyway; the report warns and compare's fit verdicts say what they rest on.
TEST(StudyCompare, AFitThatMissesItsBatchesIsFlaggedInTheReportAndTheFitVerdicts) {
  TempDir tmp;
  const std::string db = tmp.file("s.db");
  std::vector<CompareCell> cells;
  const double deviation[3] = {-0.05, 0.0, 0.05};
  const std::map<int, double> kinked = {{16, 6000}, {32, 2000}, {64, 500}, {128, 400}, {256, 380}};
  for (const auto& [batch, steps] : kinked) {
    for (int seed = 0; seed < 3; ++seed) {
      cells.push_back(
          {"lamb", batch, seed, "reached", curve(100, 6400, batch) * std::exp(deviation[seed])});
      cells.push_back({"nesterov", batch, seed, "reached", steps * std::exp(deviation[2 - seed])});
    }
  }
  write_compare_cells(db, cells);
  const StudyReport report = build_study_report(db, {});
  std::string warnings;
  for (const auto& w : report.warnings) warnings += w + "\n";
  EXPECT_TRUE(contains(warnings,
                       "nesterov: S(B) = S_min + E_min/B does not fit its batches' means "
                       "within their seeds' spread (lack-of-fit F = "))
      << warnings;
  EXPECT_FALSE(contains(warnings, "lamb: S(B)")) << warnings;
  for (const auto& f : report.fits) {
    ASSERT_TRUE(f.lack_of_fit) << f.series;
    EXPECT_EQ(f.lack_of_fit->dof_lack, 3);
    EXPECT_EQ(f.lack_of_fit->dof_pure, 10);
    if (f.series == "nesterov") {
      EXPECT_LT(f.lack_of_fit->p, 1e-6);
    } else {
      EXPECT_GT(f.lack_of_fit->p, 0.99);
    }
  }
  const auto c = compare_study_series(db, "lamb", "nesterov");
  EXPECT_EQ(c.fit_caveat.rfind("nesterov's curve misses its batches' means beyond their seeds' "
                               "spread (lack-of-fit p = ",
                               0),
            0u)
      << c.fit_caveat;
  std::string verdicts;
  for (const auto& v : c.verdicts) verdicts += v + "\n";
  EXPECT_TRUE(contains(verdicts, "lamb's S_min below nesterov's: ")) << verdicts;
  EXPECT_TRUE(contains(verdicts, "; but nesterov's curve misses")) << verdicts;
  const auto json = nlohmann::json::parse(format_study_comparison(c, results::QueryFormat::kJson));
  EXPECT_EQ(json["fits"]["caveat"], c.fit_caveat);
}

TEST(StudyCompare, ARatioWhoseIntervalHoldsOneGetsNoVerdict) {
  TempDir tmp;
  const std::string db = tmp.file("s.db");
  write_compare_cells(db, three_seed_cells(1.03));
  const auto c = compare_study_series(db, "lars", "lamb");
  for (const auto& row : c.batches) {
    EXPECT_EQ(row.steps.verdict, Verdict::kNone);
    EXPECT_EQ(row.steps.why, "95% interval includes 1");
  }
  EXPECT_EQ(c.verdicts.front(),
            "no verdict on the steps at batch 16, 32, 64, 128, 256: 95% interval includes 1");
}

TEST(StudyCompare, FewerThanThreeSeedsGiveASeedRangeAndNoVerdict) {
  TempDir tmp;
  const std::string db = tmp.file("s.db");
  write_compare_cells(db, {{"lars", 32, 0, "reached", 600},
                           {"lars", 32, 1, "reached", 500},
                           {"lamb", 32, 0, "reached", 200},
                           {"lamb", 32, 1, "reached", 190},
                           {"lars", 64, 0, "reached", 400},
                           {"lamb", 64, 0, "reached", 150}});
  const auto c = compare_study_series(db, "lars", "lamb");
  ASSERT_EQ(c.batches.size(), 2u);
  const auto& b32 = c.batches[0].steps;
  EXPECT_EQ(b32.kind, RatioKind::kSeedRange);
  EXPECT_NEAR(*b32.ratio, std::sqrt(600.0 * 500.0) / std::sqrt(200.0 * 190.0), 1e-9);
  EXPECT_NEAR(b32.interval.low, 500.0 / 200.0, 1e-9);
  EXPECT_NEAR(b32.interval.high, 600.0 / 190.0, 1e-9);
  EXPECT_EQ(b32.verdict, Verdict::kNone);
  const auto& b64 = c.batches[1].steps;
  EXPECT_EQ(b64.kind, RatioKind::kOneSeed);
  EXPECT_NEAR(*b64.ratio, 400.0 / 150.0, 1e-9);
  // No 95% anywhere: the fit ratios are seed ranges or one seed, never intervals.
  EXPECT_NE(c.s_min.kind, RatioKind::kConfidence95);
  EXPECT_NE(c.b_crit.kind, RatioKind::kConfidence95);
  const std::string text = format_study_comparison(c, results::QueryFormat::kTable);
  EXPECT_FALSE(contains(text, "A slower")) << text;
  EXPECT_TRUE(contains(text, "seed range 2.50-3.16x")) << text;
}

// The pooled ratio over batches of 2 seeds a side has no interval, and says so; it is not "one
// seed" (the BERT study's compare printed that with 2 seeds at every batch).
TEST(StudyCompare, APooledRatioFromTwoSeedsIsNotCalledOneSeed) {
  TempDir tmp;
  const std::string db = tmp.file("s.db");
  write_compare_cells(db, {{"lars", 32, 0, "reached", 600},
                           {"lars", 32, 1, "reached", 500},
                           {"lamb", 32, 0, "reached", 200},
                           {"lamb", 32, 1, "reached", 190},
                           {"lars", 64, 0, "reached", 400},
                           {"lars", 64, 1, "reached", 420},
                           {"lamb", 64, 0, "reached", 150},
                           {"lamb", 64, 1, "reached", 160}});
  const auto c = compare_study_series(db, "lars", "lamb");
  ASSERT_TRUE(c.pooled.ratio);
  EXPECT_EQ(c.pooled.kind, RatioKind::kNone);
  EXPECT_TRUE(contains(c.pooled.why, "fewer than 3 seeds a side")) << c.pooled.why;
  const std::string text = format_study_comparison(c, results::QueryFormat::kTable);
  EXPECT_FALSE(contains(text, "one seed")) << text;
}

TEST(StudyCompare, ACensoredOrSearchingSeedLeavesTheBatchWithoutARatio) {
  TempDir tmp;
  const std::string db = tmp.file("s.db");
  auto cells = three_seed_cells(2.5);
  cells.push_back({"lars", 512, 0, "censored", 0});
  cells.push_back({"lars", 512, 1, "reached", 300});
  cells.push_back({"lamb", 512, 0, "reached", 120});
  cells.push_back({"lamb", 1024, 0, "searching", 0});
  write_compare_cells(db, cells);
  const auto c = compare_study_series(db, "lars", "lamb");
  ASSERT_EQ(c.batches.size(), 7u);
  EXPECT_FALSE(c.batches[5].steps.ratio);
  EXPECT_EQ(c.batches[5].steps.why, "A: 1 of 2 seeds censored");
  EXPECT_EQ(c.batches[6].steps.why, "A: not measured; B: 1 of 1 seeds still searching");
  const auto doc = nlohmann::json::parse(format_study_comparison(c, results::QueryFormat::kJson));
  EXPECT_EQ(doc["kind"], "study_comparison");
  EXPECT_EQ(doc["batches"].size(), 7u);
  EXPECT_TRUE(doc["batches"][5]["steps_ratio"]["ratio"].is_null());
  EXPECT_EQ(doc["batches"][0]["steps_ratio"]["kind"], "95%");
  // lamb's batch 512 has one seed: no bootstrap for its fit, so the fit ratios are seed ranges.
  EXPECT_EQ(doc["fits"]["s_min"]["kind"], "seed_range");
  EXPECT_EQ(doc["fits"]["s_min"]["verdict"], "");
}

TEST(StudyCompare, ASideCensoredInEverySeedBoundsTheRatioFromItsCaps) {
  TempDir tmp;
  const std::string db = tmp.file("s.db");
  // Batch 16: lars censored in 3 seeds (cap 4000 steps), lamb reached in 3 (500 x exp(-0.1, 0,
  // 0.1)); batch 32: lars censored in 3 seeds, lamb in 2 only.
  std::vector<CompareCell> cells;
  const double deviation[3] = {-0.1, 0.0, 0.1};
  for (int seed = 0; seed < 3; ++seed) {
    cells.push_back({"lars", 16, seed, "censored", 0});
    cells.push_back({"lamb", 16, seed, "reached", 500 * std::exp(deviation[seed])});
    cells.push_back({"lars", 32, seed, "censored", 0});
    if (seed < 2) cells.push_back({"lamb", 32, seed, "reached", 300});
  }
  write_compare_cells(db, cells);
  const auto c = compare_study_series(db, "lars", "lamb");
  ASSERT_EQ(c.batches.size(), 2u);
  const auto& b16 = c.batches[0];
  ASSERT_TRUE(b16.steps.ratio);
  EXPECT_EQ(b16.steps.bound, RatioBound::kAtLeast);
  EXPECT_NEAR(*b16.steps.ratio, 8.0, 1e-9);
  ASSERT_TRUE(b16.a.cap);
  EXPECT_NEAR(*b16.a.cap, 4000.0, 1e-9);
  // lamb's log deviations have sample variance 0.01; the censored side takes the same spread:
  // se = 0.1 x sqrt(1/3 + 1/3), Student's t with 2 degrees of freedom.
  const double se = 0.1 * std::sqrt(2.0 / 3.0), t = 4.3026527;
  EXPECT_EQ(b16.steps.kind, RatioKind::kConfidence95);
  EXPECT_NEAR(b16.steps.interval.low, 8.0 * std::exp(-t * se), 1e-6);
  EXPECT_TRUE(std::isinf(b16.steps.interval.high));
  EXPECT_EQ(b16.steps.verdict, Verdict::kAHigher);
  const auto& b32 = c.batches[1].steps;
  EXPECT_EQ(b32.bound, RatioBound::kAtLeast);
  EXPECT_EQ(b32.verdict, Verdict::kNone);
  EXPECT_EQ(b32.why,
            "A: 3 of 3 seeds censored, A/B at least 13.33x; fewer than 3 seeds a side: "
            "no verdict");
  ASSERT_FALSE(c.verdicts.empty());
  EXPECT_EQ(c.verdicts.front(),
            fmt::format("lars slower than lamb (more steps to target) at batch 16: more than "
                        "8.00x (lars censored in all 3 seeds, cap 4000 steps; 95% lower bound "
                        "{:.2f}x, taking lars's seeds at their caps with lamb's seed spread)",
                        8.0 * std::exp(-t * se)));

  // The other way round: an upper bound, and "faster".
  const auto r = compare_study_series(db, "lamb", "lars");
  EXPECT_EQ(r.batches[0].steps.bound, RatioBound::kAtMost);
  EXPECT_NEAR(*r.batches[0].steps.ratio, 1.0 / 8.0, 1e-9);
  EXPECT_NEAR(r.batches[0].steps.interval.high, std::exp(t * se) / 8.0, 1e-6);
  EXPECT_EQ(r.batches[0].steps.verdict, Verdict::kALower);
  EXPECT_EQ(r.verdicts.front().rfind(
                fmt::format("lamb faster than lars (fewer steps to target) at batch 16: less than "
                            "{:.2f}x",
                            *r.batches[0].steps.ratio),
                0),
            0u)
      << r.verdicts.front();
  const std::string text = format_study_comparison(r, results::QueryFormat::kTable);
  EXPECT_TRUE(contains(text, fmt::format("95% <= {:.2f}x", std::exp(t * se) / 8.0))) << text;
  const auto doc = nlohmann::json::parse(format_study_comparison(r, results::QueryFormat::kJson));
  EXPECT_EQ(doc["batches"][0]["steps_ratio"]["bound"], "at_most");
  EXPECT_NEAR(doc["batches"][0]["b"]["cap"].get<double>(), 4000.0, 1e-9);
  EXPECT_TRUE(doc["batches"][0]["steps_ratio"]["interval"][0] == 0.0);
}

TEST(StudyCompare, AnUnknownSeriesIsRefusedListingTheStudysSeries) {
  TempDir tmp;
  const std::string db = tmp.file("s.db");
  write_compare_cells(db, three_seed_cells(2.5));
  try {
    compare_study_series(db, "larc", "lamb");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_TRUE(contains(e.what(), "no series 'larc'")) << e.what();
    EXPECT_TRUE(contains(e.what(), "'lamb', 'lars'") || contains(e.what(), "'lars', 'lamb'"))
        << e.what();
  }
  EXPECT_THROW(compare_study_series(db, "lamb", "lamb"), InputError);
  const auto r = run_batchlab("compare --db " + shell_quote(db) + " larc lamb");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "no series 'larc'")) << r.output;
  const auto usage = run_batchlab("compare --db " + shell_quote(db) + " lamb");
  EXPECT_EQ(usage.exit_code, 2) << usage.output;
  EXPECT_TRUE(contains(usage.output, "give two series")) << usage.output;
}

// Every committed study database: compare its first two series through the binary.
TEST(StudyCompare, WorksOnEveryCommittedStudyDatabase) {
  namespace fs = std::filesystem;
  int seen = 0;
  for (const auto& entry :
       fs::directory_iterator(fs::path(test_paths::source_dir()) / "docs" / "data")) {
    if (entry.path().extension() != ".db") continue;
    const std::string db = shell_quote(entry.path().string());
    const auto report = run_batchlab("report --format json --db " + db, false);
    ASSERT_EQ(report.exit_code, 0) << entry.path();
    const auto fits = nlohmann::json::parse(report.output)["fits"];
    if (fits.size() < 2) continue;
    ++seen;
    const std::string a = fits[0]["series"], b = fits[1]["series"];
    const auto r = run_batchlab("compare --db " + db + " " + shell_quote(a) + " " + shell_quote(b));
    EXPECT_EQ(r.exit_code, 0) << entry.path() << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "Verdicts")) << r.output;
    const auto json = run_batchlab(
        "compare --format json --db " + db + " " + shell_quote(a) + " " + shell_quote(b), false);
    EXPECT_EQ(nlohmann::json::parse(json.output)["a"], a);
  }
  EXPECT_GE(seen, 2);
}

}  // namespace
}  // namespace batchlab::analysis
