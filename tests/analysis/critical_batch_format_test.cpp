// analysis/critical_batch_format.h on the committed text study: every definition of the critical
// batch per series in the report's table and JSON, with its reference batch and intervals (3 seeds
// at every batch), and the two 20% definitions related to E_min/S_min as results/critical_batch.h
// derives.
#include "analysis/critical_batch_format.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "tests/test_paths.h"

namespace batchlab::analysis {
namespace {

std::filesystem::path committed(const std::string& name) {
  return std::filesystem::path(test_paths::source_dir()) / "docs" / "data" / name;
}

StudyReport text_study() { return build_study_report(committed("text_scaling_study.db"), {}); }

TEST(CriticalBatchFormat, EveryDefinitionIsInTheTableAndTheJson) {
  const auto report = text_study();
  const SeriesFit* lamb = nullptr;
  for (const auto& f : report.fits) {
    if (f.series == "lamb") lamb = &f;
  }
  ASSERT_NE(lamb, nullptr);
  const auto j = critical_batch_json(*lamb);
  EXPECT_EQ(j["reference_batch"].get<double>(), 16.0);
  EXPECT_EQ(j["largest_batch"].get<double>(), 512.0);
  // 1.2 x 16 + 0.2 x B_crit.
  EXPECT_NEAR(j["fit_excess"].get<double>(), 19.2 + 0.2 * j["b_crit"].get<double>(), 1e-9);
  ASSERT_TRUE(j["measured_excess"].is_number());
  EXPECT_GT(j["measured_excess"].get<double>(), 32.0);  // 32's samples are 1.16x 16's, 64's 1.52x
  EXPECT_LT(j["measured_excess"].get<double>(), 64.0);
  EXPECT_TRUE(j["measured_excess_interval"].is_array());
  EXPECT_TRUE(j["fit_excess_interval"].is_array());
  EXPECT_EQ(j["measured_excess_spread"]["kind"], "95%");
  EXPECT_EQ(j["measured_excess_spread"]["draws"], results::kSeedResamples);
  EXPECT_EQ(j["b_simple_spread"]["why"], "not measured");
  EXPECT_TRUE(j["b_simple"].is_null());  // the text study measured no noise scale
  const std::string text = format_study_report(report, results::QueryFormat::kTable);
  EXPECT_NE(text.find("The critical batch, every definition"), std::string::npos);
  EXPECT_NE(text.find("20%_measured"), std::string::npos);
  // LARS has no fit and no row.
  EXPECT_EQ(critical_batch_table(report.fits).rows.size(), 3u);
}

// The BERT study ran 2 seeds per batch and measured the noise scale: the 20% definitions get seed
// ranges over each seed's own fit and crossing (never "95%"), B_simple a bootstrap over its runs.
TEST(CriticalBatchFormat, TwoSeedStudiesGiveSeedRangesAndBSimpleAnIntervalOverRuns) {
  const auto report = build_study_report(committed("bert_scaling_study.db"), {});
  const auto table = critical_batch_table(report.fits);
  ASSERT_FALSE(table.rows.empty());
  const auto column = [&](const std::string& name) {
    const auto it = std::find(table.columns.begin(), table.columns.end(), name);
    EXPECT_NE(it, table.columns.end()) << name;
    return static_cast<size_t>(it - table.columns.begin());
  };
  for (const auto& row : table.rows) {
    for (const char* name : {"20%_fit_interval", "20%_measured_interval"}) {
      const auto cell = row[column(name)].value_or("");
      EXPECT_EQ(cell.rfind("seed range ", 0), 0u) << name << ": " << cell;
    }
    const auto b_simple = row[column("B_simple_interval")].value_or("");
    EXPECT_EQ(b_simple.rfind("95% ", 0), 0u) << b_simple;
    EXPECT_NE(b_simple.find(" runs"), std::string::npos) << b_simple;
  }
  for (const auto& f : report.fits) {
    const auto j = critical_batch_json(f);
    ASSERT_FALSE(j.is_null()) << f.series;
    EXPECT_EQ(j["fit_excess_spread"]["kind"], "seed range") << f.series;
    EXPECT_EQ(j["fit_excess_spread"]["draws"], 2) << f.series;
    EXPECT_TRUE(j["fit_excess_interval"].is_null());  // 95% only from 3 seeds
    EXPECT_EQ(j["measured_excess_spread"]["kind"], "seed range") << f.series;
    const auto& b = j["b_simple_spread"];
    ASSERT_EQ(b["kind"], "95%") << f.series;
    EXPECT_LE(b["low"].get<double>(), j["b_simple"].get<double>());
    EXPECT_GE(b["high"].get<double>(), j["b_simple"].get<double>());
  }
}

// Every committed study database: each definition of every fitted series has an interval, a range
// or a standard error, or says why it has none; the table never prints a bare "none".
TEST(CriticalBatchFormat, EveryCommittedStudyShowsEachDefinitionWithItsSpreadOrWhyNot) {
  int fitted = 0;
  for (const auto& entry : std::filesystem::directory_iterator(committed(""))) {
    if (entry.path().extension() != ".db") continue;
    const auto report = build_study_report(entry.path().string(), {});
    for (const auto& f : report.fits) {
      if (!f.definitions) continue;
      ++fitted;
      for (const auto* s :
           {&f.definitions->fit_excess_spread, &f.definitions->measured_excess_spread}) {
        if (s->kind == results::Spread::Kind::kNone) {
          EXPECT_FALSE(s->why.empty()) << entry.path() << " " << f.series;
        }
      }
    }
    for (const auto& row : critical_batch_table(report.fits).rows) {
      for (const auto& cell : row) {
        if (cell) {
          EXPECT_NE(*cell, "none") << entry.path();
        }
      }
    }
  }
  EXPECT_GE(fitted, 10);
}

}  // namespace
}  // namespace batchlab::analysis
