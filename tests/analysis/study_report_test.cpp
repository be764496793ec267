// The study report from a study database written by hand with the documented DDL (study_db.h):
// every number (fit, uncertainty, basin, seed range, B_simple, cost) computed independently here,
// and `batchlab report` on that database (no runs table at all) printing the same.
#include "analysis/study_report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "tests/analysis/study_db.h"
#include "tests/cli/cli_runner.h"

namespace batchlab::analysis {
namespace {

using cli::testing::run_batchlab;
using cli::testing::shell_quote;
using cli::testing::TempDir;

struct ExpectedFit {
  double s, e, s_se, e_se, b, b_se;
};

// Weighted least squares of S on 1/B (w = 1/S^2) over the reached nesterov batches of "study1", one
// point per batch (the geometric mean of its seeds: only 256 has three), solved with the uncentred
// normal equations; errors from (X'WX)^-1 scaled by the residuals.
ExpectedFit expected_nesterov_fit() {
  double a00 = 0, a01 = 0, a11 = 0, v0 = 0, v1 = 0;
  std::map<int, std::pair<double, int>> products;  // batch -> product of its seeds' steps, seeds
  for (const auto& c : testing::hand_cells()) {
    if (c.sweep == "study1" && c.optimizer == "nesterov" && c.status == "reached") {
      auto& [product, n] = products.try_emplace(c.batch, 1.0, 0).first->second;
      product *= *c.steps;
      ++n;
    }
  }
  std::vector<std::pair<double, double>> points;
  for (const auto& [b, pn] : products) points.emplace_back(b, std::pow(pn.first, 1.0 / pn.second));
  EXPECT_EQ(points.size(), 6u);
  for (const auto& [b, y] : points) {
    const double w = 1 / (y * y), x = 1 / b;
    a00 += w, a01 += w * x, a11 += w * x * x, v0 += w * y, v1 += w * x * y;
  }
  const double det = a00 * a11 - a01 * a01;
  ExpectedFit f{};
  f.s = (a11 * v0 - a01 * v1) / det;
  f.e = (a00 * v1 - a01 * v0) / det;
  double chi2 = 0;
  for (const auto& [b, y] : points) chi2 += std::pow((y - f.s - f.e / b) / y, 2);
  const double k = chi2 / (points.size() - 2.0);
  const double vs = k * a11 / det, ve = k * a00 / det, cov = -k * a01 / det;
  f.s_se = std::sqrt(vs);
  f.e_se = std::sqrt(ve);
  f.b = f.e / f.s;
  const double gs = -f.e / (f.s * f.s), ge = 1 / f.s;
  f.b_se = std::sqrt(gs * gs * vs + ge * ge * ve + 2 * gs * ge * cov);
  return f;
}

const StudyCellSummary& cell(const StudyReport& r, const std::string& id) {
  for (const auto& c : r.cells) {
    if (c.cell.cell_id == id) return c;
  }
  ADD_FAILURE() << "no cell " << id;
  return r.cells.front();
}

class StudyReportTest : public ::testing::Test {
 protected:
  TempDir dir{"study"};
  std::string db = (dir.path / "study.db").string();
  void SetUp() override { testing::write_study_db(db); }
};

TEST_F(StudyReportTest, FitMatchesAnIndependentComputation) {
  const auto r = build_study_report(db, {std::string("study1")});
  ASSERT_EQ(r.fits.size(), 2u);
  const SeriesFit& n = r.fits[1].optimizer == "nesterov" ? r.fits[1] : r.fits[0];
  EXPECT_EQ(n.series, "nesterov");  // the constant warmup key does not lengthen the label
  ASSERT_TRUE(n.fit);
  const ExpectedFit want = expected_nesterov_fit();
  EXPECT_NEAR(n.fit->s_min, want.s, 1e-9 * want.s);
  EXPECT_NEAR(n.fit->e_min, want.e, 1e-9 * want.e);
  EXPECT_NEAR(*n.fit->s_min_se, want.s_se, 1e-9 * want.s_se);
  EXPECT_NEAR(*n.fit->e_min_se, want.e_se, 1e-9 * want.e_se);
  EXPECT_NEAR(*n.fit->b_crit, want.b, 1e-9 * want.b);
  EXPECT_NEAR(*n.fit->b_crit_se, want.b_se, 1e-9 * want.b_se);
  // The hand-made curve is S = 100 + 51200/B, perturbed by a few percent.
  EXPECT_NEAR(n.fit->s_min, 100.0, 10.0);
  EXPECT_NEAR(*n.fit->b_crit, 512.0, 80.0);
  EXPECT_EQ(n.fit->points, 6);  // 64 to 2048, one point each (the three seeds at 256 are one)
  EXPECT_EQ(n.fit->excluded, std::vector<std::string>{"batch 4096 (0 of 1 seeds reached)"});
  EXPECT_EQ(n.searching, std::vector<std::string>{"batch 8192 seed 0"});
  // Run averages 200 (n64-0) and 400 (n256-0, its NULL and infinite rows skipped), then the mean.
  ASSERT_TRUE(n.b_simple);
  EXPECT_DOUBLE_EQ(*n.b_simple, 300.0);
  EXPECT_EQ(n.b_simple_runs, 2);
  const SeriesFit& a = r.fits[1].optimizer == "adam" ? r.fits[1] : r.fits[0];
  ASSERT_TRUE(a.fit);
  EXPECT_EQ(a.fit->points, 3);
  EXPECT_DOUBLE_EQ(*a.b_simple, 2000.0);
}

TEST_F(StudyReportTest, CellsBasinSeedsAndCost) {
  const auto r = build_study_report(db, {std::string("study1")});
  EXPECT_EQ(r.cells.size(), 13u);
  EXPECT_EQ(r.targets, std::vector<std::string>{"val_acc 0.85"});
  const auto& n64 = cell(r, "n64");
  EXPECT_EQ(n64.lr_points, 5);
  EXPECT_EQ(n64.basin_width, 2);  // 918 and 1100 <= 1.25 x 918 = 1147.5; 1200 is outside
  EXPECT_DOUBLE_EQ(*n64.cell.best_lr, 0.05);
  EXPECT_DOUBLE_EQ(*n64.cell.samples_to_target, 918.0 * 64);
  EXPECT_EQ(n64.setting, "schedule.warmup_fraction=0.05");
  EXPECT_EQ(n64.varying, "");
  EXPECT_EQ(r.constants, std::vector<std::string>{"schedule.warmup_fraction=0.05"});
  EXPECT_EQ(n64.seeds, 1);
  EXPECT_FALSE(n64.seed_min);
  for (const char* id : {"n256", "n256s1", "n256s2"}) {
    const auto& c = cell(r, id);
    EXPECT_EQ(c.seeds, 3) << id;
    EXPECT_DOUBLE_EQ(*c.seed_min, 290.0) << id;
    EXPECT_DOUBLE_EQ(*c.seed_max, 312.0) << id;
  }
  EXPECT_EQ(cell(r, "n4096").basin_width, 0);
  EXPECT_EQ(cell(r, "n4096").cell.status, "censored");
  // Cost: what every trial trained against its cap, over the sweep's trials.
  long long trained = 0, at_cap = 0;
  int trials = 0;
  for (const auto& t : testing::hand_trials()) {
    if (t.cell_id == "s128") continue;  // the other sweep
    trained += t.samples_trained;
    at_cap += t.cap_samples;
    ++trials;
  }
  EXPECT_EQ(r.cost.trials, trials);
  EXPECT_EQ(r.cost.samples_trained, trained);
  EXPECT_EQ(r.cost.samples_at_cap, at_cap);
  EXPECT_NEAR(*r.cost.ratio, static_cast<double>(at_cap) / trained, 1e-12);
  EXPECT_GT(*r.cost.ratio, 2.0);
  // Every sweep in the file when none is chosen: the sgd series has one batch and no fit.
  const auto all = build_study_report(db, {});
  EXPECT_EQ(all.cells.size(), 14u);
  EXPECT_EQ(all.fits.size(), 3u);
  bool warned = false;
  for (const auto& w : all.warnings) warned = warned || w.rfind("sgd: no fit", 0) == 0;
  EXPECT_TRUE(warned);
}

TEST_F(StudyReportTest, BatchlabReportPrintsTheStudy) {
  const auto json = run_batchlab("report --db " + shell_quote(db) + " --format json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  const auto j = nlohmann::json::parse(json.output);
  EXPECT_EQ(j["kind"], "study");
  const ExpectedFit want = expected_nesterov_fit();
  bool found = false;
  for (const auto& f : j["fits"]) {
    if (f["series"] != "nesterov") continue;
    found = true;
    EXPECT_NEAR(f["fit"]["s_min"].get<double>(), want.s, 1e-9 * want.s);
    EXPECT_NEAR(f["fit"]["b_crit_se"].get<double>(), want.b_se, 1e-9 * want.b_se);
    EXPECT_EQ(f["fit"]["censored"][0], "batch 4096 (0 of 1 seeds reached)");
  }
  EXPECT_TRUE(found);
  const auto table = run_batchlab("report --db " + shell_quote(db));
  ASSERT_EQ(table.exit_code, 0) << table.output;
  for (const char* text :
       {"Scaling study: 14 cells", "constant: schedule.warmup_fraction=0.05", "seed_range",
        "290.0-312.0", "B_crit_se", "B_simple", "cost: the study trained",
        "not reached within the cap", "warning: nesterov: censored batches left out of the fit",
        "warning: nesterov: seeds differ across batch sizes (64: 1, 128: 1, 256: 3, 512: 1, 1024: "
        "1, 2048: 1, 4096: 1): each"}) {
    EXPECT_NE(table.output.find(text), std::string::npos) << text << "\n" << table.output;
  }
  const auto csv = run_batchlab("report --db " + shell_quote(db) + " --format csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.output;
  // The warmup key is the same in every cell: named once above the table, not a column.
  EXPECT_EQ(csv.output.rfind("optimizer,batch,seed,status,best_lr,steps,", 0), 0u) << csv.output;
  const auto md = run_batchlab("report --db " + shell_quote(db) + " --format markdown");
  ASSERT_EQ(md.exit_code, 0) << md.output;
  EXPECT_NE(md.output.find("| series | points | seeds | S_min | S_min_se | S_min_interval |"),
            std::string::npos)
      << md.output;
}

TEST(StudyReportSeries, AnAxisThatVariesSplitsTheFit) {
  // Two warmup settings of one optimizer: two series, each fitted on its own cells.
  TempDir dir("series");
  const std::string db = (dir.path / "s.db").string();
  {
    testing::HandDb h(db);
    h.exec(testing::kStudyDdl);
    int n = 0;
    for (const char* warmup : {"0.05", "0.1"}) {
      for (int batch : {64, 256, 1024}) {
        const double steps = (warmup[2] == '1' ? 2.0 : 1.0) * (100.0 + 25600.0 / batch);
        h.exec(fmt::format(
            "INSERT INTO study_cells(cell_id, sweep_id, optimizer, global_batch, seed, cell_toml, "
            "target_metric, target_value, lr_center, lr_factor, cap_steps, warmup_steps, status, "
            "steps_to_target) VALUES('c{}', 's', 'lars', {}, 0, '[schedule]\nwarmup_fraction = "
            "{}\n[optim]\nname = \"lars\"\n', 'val_loss', 0.3, 1.0, 2.0, 5000, 10, 'reached', "
            "{})",
            n++, batch, warmup, steps));
      }
    }
  }
  const auto r = build_study_report(db, {});
  ASSERT_EQ(r.fits.size(), 2u);
  EXPECT_EQ(r.fits[0].series, "lars schedule.warmup_fraction=0.05");
  EXPECT_EQ(r.fits[1].series, "lars schedule.warmup_fraction=0.1");
  EXPECT_NEAR(r.fits[0].fit->s_min, 100.0, 1e-6);
  EXPECT_NEAR(r.fits[1].fit->s_min, 200.0, 1e-6);
  EXPECT_NEAR(*r.fits[0].fit->b_crit, 256.0, 1e-6);
  EXPECT_TRUE(r.constants.empty());
  const auto table = results::format_csv(study_cell_table(r));
  EXPECT_EQ(table.rfind("optimizer,setting,batch,", 0), 0u) << table;
  EXPECT_NE(table.find("lars,schedule.warmup_fraction=0.1,1024,"), std::string::npos) << table;
}

TEST(StudyReportSeries, AnAxisThatVariesForOneOptimizerOnlyLabelsOnlyItsSeries) {
  // The text study's shape: the trust coefficient is an axis for LARS alone (the other optimizers
  // run at its first value), so LARS has two series and LAMB one, named without the coefficient.
  TempDir dir("series_one");
  const std::string db = (dir.path / "s.db").string();
  {
    testing::HandDb h(db);
    h.exec(testing::kStudyDdl);
    int n = 0;
    const auto cell = [&](const char* optimizer, const char* tc, int batch, double steps) {
      h.exec(fmt::format(
          "INSERT INTO study_cells(cell_id, sweep_id, optimizer, global_batch, seed, cell_toml, "
          "target_metric, target_value, lr_center, lr_factor, cap_steps, warmup_steps, status, "
          "steps_to_target) VALUES('c{}', 's', '{}', {}, 0, '[optim]\nname = \"{}\"\n"
          "trust_coefficient = {}\n', 'val_loss', 0.3, 1.0, 2.0, 5000, 10, 'reached', {})",
          n++, optimizer, batch, optimizer, tc, steps));
    };
    for (int batch : {64, 256, 1024}) {
      cell("lars", "0.001", batch, 100.0 + 25600.0 / batch);
      cell("lars", "0.01", batch, 200.0 + 25600.0 / batch);
      cell("lamb", "0.001", batch, 50.0 + 25600.0 / batch);
    }
  }
  const auto r = build_study_report(db, {});
  std::vector<std::string> series;
  for (const auto& f : r.fits) series.push_back(f.series);
  std::sort(series.begin(), series.end());
  EXPECT_EQ(series, (std::vector<std::string>{"lamb", "lars optim.trust_coefficient=0.001",
                                              "lars optim.trust_coefficient=0.01"}));
  EXPECT_TRUE(r.constants.empty()) << "the coefficient varies across the study";
  for (const auto& c : r.cells) {
    if (c.cell.optimizer != "lamb") continue;
    EXPECT_EQ(c.setting, "optim.trust_coefficient=0.001") << "the setting keeps every key";
    EXPECT_EQ(c.varying, "");
  }
}

TEST_F(StudyReportTest, RunReportOptionsAreRefusedOnAStudy) {
  const auto r = run_batchlab("report --db " + shell_quote(db) + " --group-by optimizer");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--runs"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace batchlab::analysis
