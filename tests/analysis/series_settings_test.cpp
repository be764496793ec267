// analysis/series_settings.h through the study report and compare: each series' settings from its
// trials' runs.config_toml rows (a searched knob shown as searched), compare's list of the settings
// in which two series differ (table and JSON), a study database without a runs table, and the
// committed text study, whose LAMB clips the gradient and whose AdamW does not.
#include "analysis/series_settings.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "analysis/study_compare.h"
#include "analysis/study_report.h"
#include "tests/analysis/hand_db.h"
#include "tests/cli/cli_runner.h"

namespace batchlab::analysis {
namespace {

using cli::testing::contains;
using cli::testing::run_batchlab;
using cli::testing::shell_quote;
using cli::testing::TempDir;

std::string config(const std::string& name, double trust) {
  return fmt::format(
      "schema_version = 1\n[optim]\nname = \"{}\"\ntrust_coefficient = {}\nweight_decay = 0.01\n"
      "[schedule]\nwarmup_steps = 20\nsteps = 100\n",
      name, trust);
}

// lamb and lars at batches 16 and 32, one cell each with two trials; lars's trials differ in the
// trust coefficient (a searched knob). With `runs`, a runs table holds every trial's config.
void write_study(const std::string& path, bool runs) {
  testing::HandDb h(path);
  h.exec(testing::kStudyDdl);
  if (runs) h.exec("CREATE TABLE runs(run_id TEXT PRIMARY KEY, config_toml TEXT)");
  int n = 0;
  for (const std::string optimizer : {"lamb", "lars"}) {
    for (int batch : {16, 32}) {
      const std::string cell = fmt::format("c{}", n++);
      h.exec(fmt::format(
          "INSERT INTO study_cells(cell_id, sweep_id, optimizer, global_batch, seed, cell_toml, "
          "target_metric, target_value, lr_center, lr_factor, cap_steps, warmup_steps, status, "
          "steps_to_target) VALUES('{}', 's', '{}', {}, 0, '', 'val_loss', 5.8, 0.1, 2.0, 400, "
          "20, 'reached', {})",
          cell, optimizer, batch, 3200.0 / batch + 10));
      for (int t = 0; t < 2; ++t) {
        const std::string run = fmt::format("{}-{}", cell, t);
        h.exec(fmt::format(
            "INSERT INTO study_trials(run_id, cell_id, base_lr, lr_index, outcome) VALUES('{}', "
            "'{}', 0.1, {}, 'reached')",
            run, cell, t));
        const double trust = optimizer == "lars" && t == 1 ? 0.01 : 0.001;
        if (runs) {
          h.exec(fmt::format("INSERT INTO runs VALUES('{}', '{}')", run, config(optimizer, trust)));
        }
      }
    }
  }
}

std::string value(const SeriesSettings& s, const std::string& key) {
  for (const auto& x : s.settings) {
    if (x.key == key) return x.value;
  }
  return "<absent>";
}

TEST(SeriesSettings, TheReportListsEachSeriesSettingsFromItsTrialsConfigs) {
  TempDir dir;
  const std::string db = (dir.path / "s.db").string();
  write_study(db, true);
  const auto report = build_study_report(db, {});
  ASSERT_EQ(report.settings.size(), 2u);
  EXPECT_EQ(report.settings[0].series, "lamb");
  EXPECT_EQ(report.settings[0].runs, 4);
  EXPECT_EQ(report.settings[0].configs, 4);
  EXPECT_EQ(value(report.settings[0], "grad_clip"), "global norm 1");
  EXPECT_EQ(value(report.settings[1], "trust_coefficient"), "searched: 0.001, 0.01");
  EXPECT_EQ(value(report.settings[1], "grad_clip"), "off");
  const std::string text = format_study_report(report, results::QueryFormat::kTable);
  EXPECT_TRUE(contains(text, "Optimizer settings per series")) << text;
  EXPECT_TRUE(contains(text, "searched: 0.001, 0.01")) << text;
  const auto json = nlohmann::json::parse(format_study_report(report, results::QueryFormat::kJson));
  EXPECT_EQ(json["settings"][1]["series"], "lars");
  EXPECT_EQ(json["settings"][1]["values"][0]["key"], "optimizer");
}

TEST(SeriesSettings, CompareListsTheSettingsInWhichItsSeriesDifferBeforeItsVerdicts) {
  TempDir dir;
  const std::string db = (dir.path / "s.db").string();
  write_study(db, true);
  const auto c = compare_study_series(db, "lamb", "lars");
  ASSERT_TRUE(c.settings_known);
  std::map<std::string, std::pair<std::string, std::string>> diffs;
  for (const auto& d : c.settings) diffs[d.key] = {d.a, d.b};
  EXPECT_EQ(diffs["grad_clip"], std::make_pair(std::string("global norm 1"), std::string("off")));
  EXPECT_EQ(diffs["trust_coefficient"].second, "searched: 0.001, 0.01");
  EXPECT_EQ(diffs.count("warmup"), 0u);  // 20 steps on both sides
  EXPECT_EQ(diffs.count("weight_decay"), 0u);
  const std::string text = format_study_comparison(c, results::QueryFormat::kTable);
  const auto settings_at = text.find("Settings in which A and B differ");
  ASSERT_NE(settings_at, std::string::npos) << text;
  EXPECT_LT(settings_at, text.find("Verdicts")) << text;
  const auto json = nlohmann::json::parse(format_study_comparison(c, results::QueryFormat::kJson));
  EXPECT_EQ(json["settings_differ"][0]["key"], "optimizer");
}

TEST(SeriesSettings, WithoutARunsTableTheSettingsAreUnknownAndSaidToBe) {
  TempDir dir;
  const std::string db = (dir.path / "s.db").string();
  write_study(db, false);
  const auto report = build_study_report(db, {});
  ASSERT_EQ(report.settings.size(), 2u);
  EXPECT_EQ(report.settings[0].configs, 0);
  EXPECT_TRUE(report.settings[0].settings.empty());
  EXPECT_FALSE(contains(format_study_report(report, results::QueryFormat::kTable),
                        "Optimizer settings per series"));
  const auto c = compare_study_series(db, "lamb", "lars");
  EXPECT_FALSE(c.settings_known);
  EXPECT_TRUE(
      contains(format_study_comparison(c, results::QueryFormat::kTable), "Settings: unknown"));
  const auto json = nlohmann::json::parse(format_study_comparison(c, results::QueryFormat::kJson));
  EXPECT_TRUE(json["settings_differ"].is_null());
}

// The committed text study through the binary: LAMB clipped the gradient at norm 1 and used eps
// 1e-6; AdamW did neither. Issue 43's point that the lines were not treated alike, shown by the
// tool.
TEST(SeriesSettings, TheCommittedTextStudyShowsLambsClippingAgainstAdamW) {
  const auto db =
      std::filesystem::path(test_paths::source_dir()) / "docs" / "data" / "text_scaling_study.db";
  const auto r =
      run_batchlab("compare --format json --db " + shell_quote(db.string()) + " lamb adamw", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::map<std::string, std::pair<std::string, std::string>> diffs;
  const auto json = nlohmann::json::parse(r.output);
  for (const auto& d : json["settings_differ"]) {
    diffs[d["key"].get<std::string>()] = {d["a"].get<std::string>(), d["b"].get<std::string>()};
  }
  EXPECT_EQ(diffs["grad_clip"], std::make_pair(std::string("global norm 1"), std::string("off")));
  EXPECT_EQ(diffs["eps"], std::make_pair(std::string("1e-06"), std::string("1e-08")));
  EXPECT_EQ(diffs.count("warmup"), 0u);
  const auto report = run_batchlab("report --db " + shell_quote(db.string()), false);
  EXPECT_TRUE(contains(report.output, "Optimizer settings per series")) << report.output;
}

}  // namespace
}  // namespace batchlab::analysis
